"""kill -9 at every dangerous point of index, update, delete and erase, then restart: the registry and the
stored chunks agree, nothing orphaned is retrievable, and each document is wholly old or wholly new.

One real ``freki serve`` process per kill point; ``WOLF_FAULT_POINT`` (``wolf_service.faults``) makes it
SIGKILL itself there. The process started after one kill is the one that dies at the next point, so the
consistency pass of every restart is checked too.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2

from tests.freki.freki_process_support import FrekiProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]



def version(doc: str, marker: str) -> str:
    return "\n\n".join(
        f"Paragraph {i} of {doc}: {marker} the lighthouse keeper logged {i * 13 + 5} ships passing the "
        f"{['northern', 'western', 'southern'][i % 3]} reef, and {marker} noted the lamp oil level {i}."
        for i in range(8)
    )


# (kill point, scenario): the operation that dies there, and what must hold after the restart.
POINTS = [
    ("create.chunks_written", "create", "absent"),
    ("update.chunks_written", "update", "old"),
    ("update.committed", "update", "new"),
    ("delete.record_deleted", "delete", "absent"),
    ("erase.records_deleted", "erase", "absent"),
]


class Server(FrekiProcess):

    def state(self, owner: str) -> dict[str, list[str]]:
        """document id -> chunk contents, checking the registry against the stored chunks on the way."""
        listed = {d.document_id: d for d in self.stub.ListDocuments(
            freki_pb2.ListDocumentsRequest(page_size=1000), timeout=30).documents}
        records = list(self.stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(
            request_id="x", owner_id=owner), timeout=60))
        chunks: dict[str, list[str]] = {}
        for r in records:
            if r.WhichOneof("record") == "chunk":
                chunks.setdefault(r.chunk.document_id, []).append(r.chunk.content)
        status = self.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        assert status.chunk_count == sum(d.chunk_count for d in listed.values()), "stored chunks = registry"
        for doc_id, info in listed.items():
            if info.owner_id == owner:
                assert len(chunks.get(doc_id, [])) == info.chunk_count, doc_id
        assert set(chunks) <= set(listed), "no chunk without a record"
        return chunks

    def retrievable(self, prompt: str) -> set[str]:
        response = self.stub.RetrieveContext(common_pb2.WolfRequest(
            request_id="q", model_type=common_pb2.RAG, prompt=prompt,
            retrieval=common_pb2.RetrievalOptions(top_k=50)), timeout=30)
        return {d.document_id for d in response.rag_context.documents}




def run(server: Server, scenario: str, doc: str, owner: str) -> None:
    """The operation that the fault point interrupts (after any set-up it needs)."""
    def index(marker: str) -> None:
        server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=f"{doc}-{marker}", document_id=doc, owner_id=owner, content=version(doc, marker)),
            timeout=120)

    try:
        if scenario == "create":
            index("VERSIONNEW")
        elif scenario == "update":
            index("VERSIONOLD")
            index("VERSIONNEW")
        elif scenario == "delete":
            index("VERSIONOLD")
            server.stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="d", document_id=doc), timeout=60)
        else:
            index("VERSIONOLD")
            server.stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id="e", owner_id=owner), timeout=60)
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc  # the server died mid-call
    else:
        raise AssertionError("the fault point was never reached")


def test_kill_9_at_every_commit_step_leaves_a_consistent_index(tmp_path: Path) -> None:
    config = tmp_path / "freki.json"
    config.write_text(json.dumps({
        "data_dir": str(tmp_path / "data"), "chunking": {"max_tokens": 120, "min_tokens": 20, "overlap_tokens": 10},
        "store": {"maintenance_interval_s": 0},
    }))
    log = tmp_path / "freki.log"
    server = Server(config, log, POINTS[0][0])
    table = []
    for number, (point, scenario, expected) in enumerate(POINTS):
        doc, owner = f"doc-{number}", f"owner-{number}"
        run(server, scenario, doc, owner)
        assert server.wait_dead() == -signal.SIGKILL
        following = POINTS[number + 1][0] if number + 1 < len(POINTS) else "none"
        server = Server(config, log, following)
        chunks = server.state(owner).get(doc, [])
        found = "absent" if not chunks else (
            "new" if all("VERSIONNEW" in c for c in chunks) else "old" if all("VERSIONOLD" in c for c in chunks)
            else "MIXED")
        table.append((point, expected, found))
        assert found == expected, f"after a kill at {point}: {found}, expected {expected}"
        assert (doc in server.retrievable(f"lighthouse keeper {doc} reef lamp oil")) == (found != "absent")
    server.stop()
    repaired = [line for line in log.read_text().splitlines() if "consistency pass" in line]
    assert any("orphan" in line for line in repaired), "the pass reports what it removed"
    print("\nkill point -> expected / found:\n" + "\n".join(f"  {p}: {e} / {f}" for p, e, f in table))
