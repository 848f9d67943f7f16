"""kill -9 in the middle of a blue/green model migration, then restart: the old index is what serves (the
active-index record still names it) and the migration resumes where it was; kill -9 right after the switch
write: the restart serves the new index and drops the old one.

Real ``freki serve`` processes, the packaged MiniLM and a second real model (its first 3 layers);
``WOLF_FAULT_POINT`` (``wolf_service.faults``) makes the server SIGKILL itself after the n-th document.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from wolf.v1 import common_pb2, freki_pb2

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.settings import FrekiSettings
from tests.freki.engine.small_models_support import build_second_model
from tests.freki.freki_process_support import FrekiProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DOCS = 8


class Server(FrekiProcess):

    def status(self) -> freki_pb2.IndexStatus:
        return self.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)

    def documents(self) -> set[str]:
        return {d.document_id for d in self.stub.ListDocuments(
            freki_pb2.ListDocumentsRequest(page_size=1000), timeout=30).documents}

    def top(self, prompt: str) -> str:
        response = self.stub.RetrieveContext(common_pb2.WolfRequest(
            request_id="q", model_type=common_pb2.RAG, prompt=prompt,
            retrieval=common_pb2.RetrievalOptions(top_k=1)), timeout=30)
        return response.rag_context.documents[0].document_id



def body(i: int) -> str:
    animal = ["heron", "badger", "otter", "lynx", "stoat", "marten", "vole", "crane"][i]
    return "\n\n".join(f"Paragraph {p} of the {animal} survey: {p * 3 + i} {animal}s seen near the weir, "
                       f"noted by the {animal} warden in the {animal} logbook." for p in range(4))


def test_kill_9_mid_migration_keeps_the_old_index_and_the_restart_resumes(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    second = build_second_model(tmp_path / "minilm3")
    data = tmp_path / "data"
    settings = {"data_dir": str(data), "embedding_backend": "torch", "store": {"maintenance_interval_s": 0},
                "chunking": {"max_tokens": 120, "min_tokens": 20, "overlap_tokens": 10}}
    new_config = tmp_path / "new.json"
    new_config.write_text(json.dumps({**settings, "embedding_model": second, "reindex": {"switch_grace_s": 0}}))
    log = tmp_path / "freki.log"

    engine = FrekiEngine(FrekiSettings(**settings), embedder=embedder)  # type: ignore[arg-type]
    try:  # the index built with the old model (in this process: one server start less)
        for i in range(DOCS):
            engine.index(IndexInput(tenant_id="default", document_id=f"d{i}", data=body(i)))
    finally:
        engine.close()

    server = Server(new_config, log, fault="migration.document.3")
    status = server.status()
    assert (status.embedding_model, status.configured_embedding_model) == ("all-MiniLM-L6-v2", second)
    started = server.stub.FullReindex(freki_pb2.FullReindexRequest(request_id="m", migrate_model=True), timeout=30)
    assert (started.migration.model_from, started.migration.model_to) == ("all-MiniLM-L6-v2", second)
    assert server.proc.wait(120) == -signal.SIGKILL
    record = json.loads((data / "active_index.json").read_text())
    assert record["version"] == 0 and record["migration"]["target"] == 1, "the old index is still the active one"

    server = Server(new_config, log, fault="migration.switched")  # resumes by itself, dies after the switch
    first = server.status()
    if first.embedding_model == "all-MiniLM-L6-v2":  # caught before the switch: the old index serves meanwhile
        assert first.migration.model_to == second and first.document_count == DOCS
        assert server.top("badger warden logbook weir") == "d1"
    assert server.proc.wait(120) == -signal.SIGKILL
    assert json.loads((data / "active_index.json").read_text()) == {"version": 1, "migration": None}
    assert (data / "qdrant" / "freki_chunks").exists(), "killed before the old index was dropped"

    server = Server(new_config, log)
    status = server.status()
    assert (status.embedding_model, status.collection, status.document_count) == (second, "freki_chunks__v1", DOCS)
    assert not status.HasField("migration")
    assert server.documents() == {f"d{i}" for i in range(DOCS)}
    assert server.top("badger warden logbook weir") == "d1"
    server.stop()
    switching = [line for line in log.read_text().splitlines() if "switching after" in line]
    assert len(switching) == 1 and "(3 already migrated before)" in switching[0], switching
    assert not (data / "qdrant" / "freki_chunks").exists(), "the restart dropped the replaced index"
