"""The opt-in search log: one line per search per tenant beside the feedback log, bounded by size and age,
in the owner's export and gone with an erasure; over real gRPC with the real model and Qdrant engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.graph.search_log import SearchLog, log_path
from freki.settings import FrekiSettings, SearchLogSettings
from tests.freki.api.test_service import index, rid
from tests.freki.conftest import freki_settings


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory, embedder  # type: ignore[no-untyped-def]
           ) -> Iterator[tuple[freki_pb2_grpc.FrekiServiceStub, FrekiEngine]]:
    settings = freki_settings(tmp_path_factory.mktemp("freki"), search_log={"enabled": True})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with grpc.insecure_channel(handle.address) as channel:
            yield freki_pb2_grpc.FrekiServiceStub(channel), engine
    finally:
        handle.stop(1.0)
        engine.close()


def search(stub, prompt: str, tenant: str, owner: str = "") -> common_pb2.WolfResponse:  # type: ignore[no-untyped-def]
    return stub.RetrieveContext(common_pb2.WolfRequest(
        request_id=rid(), model_type=common_pb2.RAG, prompt=prompt, tenant_id=tenant,
        metadata=common_pb2.RequestMetadata(owner_id=owner),
        retrieval=common_pb2.RetrievalOptions(top_k=2, score_threshold=0.0, neighbours=1)), timeout=30)


def lines(engine: FrekiEngine, tenant: str) -> list[dict]:
    path = log_path(Path(engine.settings.data_dir) / "search_log", tenant)
    return [json.loads(raw) for raw in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.integration
def test_each_search_is_logged_with_its_query_id_hits_and_scores_per_tenant(logged) -> None:  # type: ignore[no-untyped-def]
    stub, engine = logged
    index(stub, "kiln.md", "The pottery kiln fires stoneware at 1280 degrees.", tenant_id="sl", owner_id="ann")
    index(stub, "loom.md", "The weaving loom takes linen warp threads.", tenant_id="sl", owner_id="ben")
    index(stub, "kiln.md", "Another tenant's kiln.", tenant_id="sl-other")
    reply = search(stub, "how hot does the kiln fire", "sl", owner="carol")
    entry = lines(engine, "sl")[-1]
    assert entry["query_id"] == reply.rag_context.query_id and entry["query"] == "how hot does the kiln fire"
    assert entry["owner_id"] == "carol" and entry["mode"] and entry["took_ms"] >= 0
    shown = [(d.document_id, d.chunk_id, round(d.relevance_score, 4)) for d in reply.rag_context.documents
             if not d.neighbour_of]
    assert [(h["document_id"], h["chunk_id"], h["score"]) for h in entry["hits"]] == shown
    assert entry["hits"][0]["document_id"] == "kiln.md"
    assert all(e["tenant_id"] == "sl" for e in lines(engine, "sl")), "one file per tenant"

    # The owner's export holds her searches; erasing a document removes the searches that found it.
    export = list(stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(request_id=rid(), tenant_id="sl",
                                                                        owner_id="carol"), timeout=30))
    searches = [r.search for r in export if r.WhichOneof("record") == "search"]
    assert [s.query_id for s in searches] == [reply.rag_context.query_id]
    assert searches[0].hits[0].document_id == "kiln.md"
    stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id=rid(), tenant_id="sl", document_id="kiln.md"))
    assert all("kiln.md" not in {h["document_id"] for h in e["hits"]} for e in lines(engine, "sl"))
    # Erasing an owner removes the searches naming him, even with no document of his.
    search(stub, "linen warp", "sl", owner="dave")
    assert any(e["owner_id"] == "dave" for e in lines(engine, "sl"))
    stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id=rid(), tenant_id="sl", owner_id="dave"))
    assert not any(e["owner_id"] == "dave" for e in lines(engine, "sl"))


@dataclass
class Live:
    """Stands for the live settings object a reload updates."""

    search_log: SearchLogSettings


def test_off_by_default_and_a_reload_turns_it_on(tmp_path: Path) -> None:
    assert FrekiSettings(data_dir=tmp_path).search_log.enabled is False
    live = Live(SearchLogSettings())
    search_log = SearchLog(tmp_path, lambda: live.search_log)
    assert not search_log.record("t", "q1", "query", [], mode="dense", took_ms=1)
    assert not list(tmp_path.iterdir())
    live.search_log = SearchLogSettings(enabled=True)
    assert search_log.record("t", "q2", "query", [("d", "c", 0.5)], mode="dense", took_ms=1)
    assert [e["query_id"] for e in search_log.entries("t")] == ["q2"]


def test_size_and_age_bounds_keep_the_newest_lines(tmp_path: Path) -> None:
    limits = SearchLogSettings(enabled=True, max_bytes=4096, max_hits=2, max_query_chars=50)
    search_log = SearchLog(tmp_path, lambda: limits)
    path = log_path(tmp_path, "t")
    tmp_path.mkdir(exist_ok=True)
    old = (datetime.now(UTC) - timedelta(days=limits.max_age_days + 1)).isoformat()
    path.write_text(json.dumps({"at": old, "query_id": "ancient", "hits": []}) + "\n")
    for i in range(200):
        search_log.record("t", f"q{i}", "x" * 500, [("d", "c", 0.1)] * 5, mode="hybrid", took_ms=i)
        assert path.stat().st_size <= limits.max_bytes
    entries = list(search_log.entries("t"))
    assert entries[-1]["query_id"] == "q199" and "ancient" not in {e["query_id"] for e in entries}
    assert [int(e["query_id"][1:]) for e in entries] == sorted(int(e["query_id"][1:]) for e in entries)
    assert len(entries[-1]["query"]) == 50 and len(entries[-1]["hits"]) == 2
