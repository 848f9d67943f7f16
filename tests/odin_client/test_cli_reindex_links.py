"""``odin reindex``, ``odin status`` (models, migration), ``odin links`` and ``odin feedback`` against a real
in-process Freki (packaged model, embedded Qdrant engine) whose settings name a second model: it serves the
MiniLM index until ``odin reindex --migrate-model`` migrates it blue/green. Geri is the controllable one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("freki.api.server")

from freki.api.server import build_server  # noqa: E402
from freki.engine import FrekiEngine  # noqa: E402
from freki.ingest.indexing import IndexInput  # noqa: E402
from freki.settings import FrekiSettings  # noqa: E402
from odin_client import OdinClient, OdinSettings  # noqa: E402
from odin_client.cli import main as odin  # noqa: E402
from tests.freki.engine.small_models_support import build_second_model  # noqa: E402
from wolf_service.serving import ServerHandle  # noqa: E402

pytestmark = pytest.mark.integration
NOTES = {
    "harbour.md": "# Harbour\n\nThe harbour keeper logs every ship. See [[Lighthouse]] and [[Missing Dock]].\n",
    "lighthouse.md": "# Lighthouse\n\nThe lighthouse lamp is lit at dusk and its keeper writes the hours down.\n",
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[tuple[ServerHandle, str, Path]]:  # type: ignore[no-untyped-def]
    data = tmp_path_factory.mktemp("odin-freki")
    second = build_second_model(tmp_path_factory.mktemp("minilm3"))
    base = {"data_dir": data, "embedding_backend": "torch", "reindex": {"switch_grace_s": 0.0}}
    engine = FrekiEngine(FrekiSettings(**base), embedder=embedder)  # type: ignore[arg-type]
    try:
        for name, text in NOTES.items():
            engine.index(IndexInput(tenant_id="default", document_id=name, data=text, source=name))
    finally:
        engine.close()
    settings = FrekiSettings(host="127.0.0.1", port=0, embedding_model=second, **base)  # type: ignore[arg-type]
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        yield handle, second, data
    finally:
        handle.stop(1.0)
        engine.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = odin(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_links_lists_outgoing_resolved_and_dangling_and_backlinks(served, capsys) -> None:  # type: ignore[no-untyped-def]
    target = ["--freki", served[0].address]
    code, out, _ = run(capsys, "links", "harbour.md", "--json", *target)
    assert code == 0
    edges = {(e["target"], e["target_document_id"]) for e in json.loads(out)["outgoing"]}
    assert edges == {("Lighthouse", "lighthouse.md"), ("Missing Dock", "")}
    code, out, _ = run(capsys, "links", "lighthouse.md", *target)
    assert code == 0 and "<- harbour.md\t" in out and "0 outgoing, 1 backlink(s)" in out
    assert run(capsys, "links", "nowhere.md", *target)[0] == 1  # NOT_FOUND


def test_feedback_records_a_rating_of_a_retrieved_document_and_refuses_a_bad_one(served, capsys) -> None:  # type: ignore[no-untyped-def]
    handle, _, data = served
    with OdinClient(OdinSettings(freki_target=handle.address)) as client:
        query_id = client.retrieve("when is the lamp lit", top_k=1).context.query_id
    code, out, _ = run(capsys, "feedback", query_id, "lighthouse.md", "5", "--comment", "spot on",
                       "--freki", handle.address)
    assert code == 0 and f"recorded rating 5 for query {query_id}" in out
    [log] = list((data / "feedback").glob("*.jsonl"))
    line = json.loads(log.read_text().splitlines()[-1])
    assert (line["query_id"], line["document_id"], line["rating"]) == (query_id, "lighthouse.md", 5)
    code, _, err = run(capsys, "feedback", query_id, "lighthouse.md", "9", "--freki", handle.address)
    assert code == 2 and "rating must be between 1 and 5" in err


def test_reindex_rechunks_from_the_kept_sources(served, capsys) -> None:  # type: ignore[no-untyped-def]
    target = ["--freki", served[0].address]
    code, out, _ = run(capsys, "reindex", "--json", *target)
    result = json.loads(out)
    assert code == 0 and result["documents_reindexed"] == result["documents_rechunked"] == 2
    assert result["migration"] is None
    code, out, _ = run(capsys, "reindex", "--document", "harbour.md", *target)
    assert code == 0 and "reindexed 1 document(s)" in out and "1 re-chunked from the kept source" in out


def test_status_shows_the_models_and_reindex_migrate_model_migrates(served, geri, capsys) -> None:  # type: ignore[no-untyped-def]
    handle, second, _ = served
    target = ["--freki", handle.address, "--geri", geri[1].address]
    code, out, _ = run(capsys, "status", *target)
    assert code == 0 and f"configured model {second} (serving the index of all-MiniLM-L6-v2" in out
    assert "model all-MiniLM-L6-v2 (384 dims) for every other type: 2 documents" in out
    code, out, _ = run(capsys, "reindex", "--migrate-model", *target)
    assert code == 0 and f"migration all-MiniLM-L6-v2 -> {second}: " in out and "progress: odin status" in out
    deadline = time.monotonic() + 120
    while True:
        code, out, _ = run(capsys, "status", "--json", *target)
        migration = json.loads(out)["freki"]["migration"]
        if migration["state"] in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert migration["state"] == "done", migration
    assert migration["documents_done"] == migration["documents_total"] == 2
    code, out, _ = run(capsys, "status", *target)
    assert f"migration all-MiniLM-L6-v2 -> {second}: done, 2/2 documents" in out
    assert f"model {second} (384 dims) for every other type: 2 documents" in out
    assert "configured model" not in out
