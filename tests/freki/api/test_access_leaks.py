"""What a group-restricted key could still learn of a hidden document, on a real Freki (real model, embedded
Qdrant engine): through the slots of graph expansion, through a migration's progress counts, and by racing
another write to the same document. docs/decisions/0330-access-leaks-closed.md.

The probe: what the restricted key gets must equal what it gets from a twin tenant that never held the hidden
document (and what an unrestricted key gets when it filters the document out).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.settings import FrekiSettings
from tests.freki.api.test_service import rid
from tests.freki.conftest import freki_settings
from tests.freki.engine.small_models_support import build_second_model
from wolf_service.auth import hash_key

pytestmark = pytest.mark.integration

KEYS = {"admin": "leak-admin-key-0123456789", "agent": "leak-agent-key-0123456789",
        "twin": "leak-twin-agent-key-0123456789"}
GUIDE = "# Viewing Guide\n\nViewing appointments for every property are booked through the front desk."
HANDOVER = "# Key Handover\n\nKeys for a viewing appointment are collected at the front desk on the day."
PARKING = "# Parking\n\nVisitors park their cars in the courtyard behind the office. See [[Viewing Guide]]."
# Hidden (team-b): links to both seeds, so its bonus is above the parking note's and it would take the one slot.
HIDDEN = "# Divorce Sale\n\nConfidential: the owners divorce. See [[Viewing Guide]] and [[Key Handover]]."
VISIBLE = (("guide", GUIDE), ("handover", HANDOVER), ("parking", PARKING))
PROBE = "How are viewing appointments and keys handled at the front desk?"


def key(name: str, tenant: str, groups: list[str] | None) -> dict[str, object]:
    return {"name": name, "tenant": tenant, "sha256": hash_key(KEYS[name]), "access_groups": groups}


def as_(name: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {KEYS[name]}"),)


def index(stub: freki_pb2_grpc.FrekiServiceStub, who: str, doc_id: str, text: str,
          groups: list[str]) -> freki_pb2.IndexDocumentResponse:
    return stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id=rid(), document_id=doc_id, content=text, source=f"{doc_id}.md", content_type="markdown",
        access_groups=groups), metadata=as_(who), timeout=60)


Served = tuple[freki_pb2_grpc.FrekiServiceStub, FrekiEngine]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    """Tenant ``immo`` holds the visible notes and the hidden one; tenant ``twin`` the visible notes only. One
    neighbour slot, so a hidden document taking it would show."""
    settings = freki_settings(tmp_path_factory.mktemp("leaks"), graph={"max_neighbours": 1}, security={"api_keys": [
        key("admin", "immo", None), key("agent", "immo", ["team-a"]), key("twin", "twin", ["team-a"])]})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            for who in ("agent", "twin"):
                for doc_id, text in VISIBLE:
                    index(stub, who, doc_id, text, [])
            index(stub, "admin", "divorce", HIDDEN, ["team-b"])
            yield stub, engine
    finally:
        handle.stop(1.0)
        engine.close()


def expanded(stub: freki_pb2_grpc.FrekiServiceStub, who: str, **options: Any) -> list[tuple[Any, ...]]:
    """Ids, scores and explained graph parts of a dense, graph-expanded retrieval (dense: the twin tenant's
    scores are then the same, BM25's per-tenant statistics do not enter)."""
    request = common_pb2.WolfRequest(request_id=rid(), model_type=common_pb2.RAG, prompt=PROBE, retrieval=(
        common_pb2.RetrievalOptions(mode=common_pb2.SEARCH_MODE_DENSE, top_k=2, score_threshold=0.0,
                                    graph_expand=True, explain=True, **options)))
    found = stub.RetrieveContext(request, metadata=as_(who), timeout=30).rag_context
    return [(d.document_id, round(d.relevance_score, 5), round(d.explanation.centrality, 5),
             sorted((e.source_document_id, e.target_document_id) for e in d.explanation.edges))
            for d in found.documents]


def test_a_hidden_document_takes_no_neighbour_slot(served: Served) -> None:
    stub, _ = served
    agent, twin = expanded(stub, "agent"), expanded(stub, "twin")
    # The parking note joined through its link to the guide: the seeds' centrality shows it.
    assert any(("parking", "guide") in edges for *_, edges in twin), twin
    assert agent == twin
    excluded = expanded(stub, "admin", filters=[
        common_pb2.MetadataFilter(key="@document_id", values=["divorce"], exclude=True)])
    assert excluded == twin
    # Without the filter the admin's expansion does see the hidden document's links.
    assert any("divorce" in {s for pair in edges for s in pair} for *_, edges in expanded(stub, "admin"))


def test_a_write_racing_a_group_change_cannot_replace_the_now_hidden_version(
        served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's write is checked while the document is tenant-wide; before it commits, the admin moves the
    document to team-b. The agent's write must then be refused, not replace team-b's version."""
    stub, engine = served
    index(stub, "agent", "listing", "# Listing\n\nA flat by the park, listed by team a.", ["team-a"])
    entered, release = threading.Event(), threading.Event()
    parse = engine.indexer._parse

    def held(doc: IndexInput, deadline: Any) -> Any:  # holds the admin's write inside the document's lock
        if doc.access_groups == ("team-b",):
            entered.set()
            assert release.wait(60)
        return parse(doc, deadline)

    monkeypatch.setattr(engine.indexer, "_parse", held)
    with ThreadPoolExecutor(2) as pool:
        admin = pool.submit(index, stub, "admin", "listing", "# Listing\n\nSold privately, team b.", ["team-b"])
        assert entered.wait(60)
        agent = pool.submit(index, stub, "agent", "listing", "# Listing\n\nPrice cut by team a.", ["team-a"])
        locks = engine.indexer._locks._locks
        deadline = time.monotonic() + 60
        while locks.get(("immo", "listing"), (None, 0))[1] < 2:  # the agent's write waits for the lock
            assert time.monotonic() < deadline and not agent.done(), agent.result()
            time.sleep(0.01)
        release.set()
        assert admin.result().outcome == freki_pb2.INDEX_OUTCOME_UPDATED
        with pytest.raises(grpc.RpcError) as refused:
            agent.result()
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, refused.value.details()
    after = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="listing"), metadata=as_("admin"))
    assert list(after.access_groups) == ["team-b"]
    hit = stub.RetrieveContext(common_pb2.WolfRequest(request_id=rid(), model_type=common_pb2.RAG,
                                                      prompt="listing sold privately price cut"),
                               metadata=as_("admin"), timeout=30).rag_context
    texts = [d.content for d in hit.documents if d.document_id == "listing"]
    assert texts and all("team b" in t and "team a" not in t for t in texts)


def test_a_restricted_or_tenant_key_sees_no_counts_spanning_the_store(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    base = {"data_dir": tmp_path / "data", "embedding_backend": "torch", "reindex": {"switch_grace_s": 0.0}}
    engine = FrekiEngine(FrekiSettings(**base), embedder=embedder)  # type: ignore[arg-type]
    try:
        for doc_id, groups in (("mine", ("team-a",)), ("theirs", ("team-b",)), ("also-theirs", ("team-b",))):
            engine.index(IndexInput(tenant_id="immo", document_id=doc_id, data=f"# {doc_id}\n\nA note.",
                                    source=f"{doc_id}.md", access_groups=groups))
    finally:
        engine.close()
    second = build_second_model(tmp_path / "minilm3")
    settings = FrekiSettings(host="127.0.0.1", port=0, embedding_model=second, **base,  # type: ignore[arg-type]
                             security={"api_keys": [key("admin", "immo", None), key("agent", "immo", ["team-a"]),
                                                    {**key("twin", "other", None), "scopes": ["read", "write"]}]})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            stub.FullReindex(freki_pb2.FullReindexRequest(request_id=rid(), migrate_model=True),
                             metadata=as_("admin"), timeout=30)
            deadline = time.monotonic() + 120
            while (status := engine.blue_green.status()) and status.state not in ("done", "failed"):
                assert time.monotonic() < deadline, status
                time.sleep(0.1)

            def status(who: str) -> freki_pb2.IndexStatus:
                return stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), metadata=as_(who))

            admin, agent, other = status("admin").migration, status("agent").migration, status("twin")
            admin_disk = status("admin").disk
    finally:
        handle.stop(1.0)
        engine.close()
    assert (admin.state, admin.documents_done, admin.documents_total) == ("done", 3, 3)
    assert (agent.state, agent.model_from, agent.model_to) == (admin.state, admin.model_from, admin.model_to)
    assert (agent.documents_done, agent.documents_total) == (0, 0)  # 3 would count the two hidden notes
    # Another tenant's key without admin scope: the migration spans immo's documents, and free bytes move with
    # every tenant's writes; it sees the states only.
    assert (other.migration.state, other.migration.documents_done, other.migration.documents_total) == ("done", 0, 0)
    assert admin_disk.free_bytes > 0 and admin_disk.path
    assert (other.disk.level, other.disk.free_bytes, other.disk.total_bytes, other.disk.path) == (
        admin_disk.level, 0, 0, "")
