"""GDPR over the real gRPC service: export a data owner's data, erase it, and check nothing of it remains."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.gdpr.cli import main as gdpr_cli
from freki.gdpr.export_file import export_to_file, read_jsonl
from freki.graph.feedback import log_path
from freki.settings import FrekiSettings
from freki.store import FieldMatch
from tests.freki.watch.conftest import paragraphs
from wolf_service.audit_log import read_audit_log
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration

SECRET = "Alice Example lives at 12 Birch Lane and her badge number is 4471."
DOCS = [  # tenant, document id, owner, text
    ("t1", "alice-diary", "alice", SECRET + "\n\n" + paragraphs("alice", 3)),
    ("t1", "alice-notes", "alice", paragraphs("alicenotes", 2)),
    ("t1", "bob-notes", "bob", paragraphs("bob", 3)),
    ("t2", "alice-elsewhere", "alice", "Alice Example also appears in another tenant.\n\n" + paragraphs("other", 2)),
]


class Env:
    def __init__(self, handle: ServerHandle, engine: FrekiEngine, stub: freki_pb2_grpc.FrekiServiceStub,
                 audit: Path) -> None:
        self.handle, self.engine, self.stub, self.audit = handle, engine, stub, audit

    def search(self, tenant: str, text: str) -> list[common_pb2.RetrievedDocument]:
        return list(self.stub.RetrieveContext(common_pb2.WolfRequest(
            request_id="q", tenant_id=tenant, model_type=common_pb2.RAG, prompt=text,
            # threshold 0: everything the tenant still has must be reachable, however unrelated
            retrieval=common_pb2.RetrievalOptions(top_k=50, score_threshold=0.0)), timeout=30).rag_context.documents)

    def listed(self, tenant: str, owner: str = "") -> list[str]:
        response = self.stub.ListDocuments(
            freki_pb2.ListDocumentsRequest(tenant_id=tenant, owner_id=owner, page_size=100), timeout=30)
        return sorted(d.document_id for d in response.documents)

    def export(self, tenant: str, owner: str, vectors: bool = False) -> list[freki_pb2.ExportRecord]:
        return list(self.stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(
            request_id="x", tenant_id=tenant, owner_id=owner, include_vectors=vectors), timeout=60))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Env]:  # type: ignore[no-untyped-def]
    data = tmp_path_factory.mktemp("gdpr")
    settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=data, audit_log=data / "audit.jsonl",
                             chunking={"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    channel = grpc.insecure_channel(handle.address)
    try:
        stub = freki_pb2_grpc.FrekiServiceStub(channel)
        for tenant, doc_id, owner, text in DOCS:
            stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id=f"i-{doc_id}", tenant_id=tenant, document_id=doc_id, owner_id=owner, content=text,
                source=f"{doc_id}.txt"), timeout=120)
        yield Env(handle, engine, stub, data / "audit.jsonl")
    finally:
        channel.close()
        handle.stop(1.0)
        engine.close()


def test_export_streams_documents_then_their_chunks_into_portable_json_lines(env: Env, tmp_path: Path) -> None:
    records = env.export("t1", "alice", vectors=True)
    out = tmp_path / "alice.jsonl"
    summary = export_to_file(iter(records), out, tenant="t1", owner_id="alice")
    lines = list(read_jsonl(out))
    assert lines[0]["type"] == "export" and lines[0]["owner_id"] == "alice"
    documents = [x["document"] for x in lines if x["type"] == "document"]
    chunks = [x["chunk"] for x in lines if x["type"] == "chunk"]
    assert sorted(d["document_id"] for d in documents) == ["alice-diary", "alice-notes"]
    assert summary.documents == 2 and summary.chunks == len(chunks) == sum(d["chunk_count"] for d in documents)
    assert all(len(c["vector"]) == 384 for c in chunks)
    assert any("12 Birch Lane" in c["content"] for c in chunks)
    # Each document comes before its own links and chunks, so the stream can be consumed one document at a time.
    order = [x[x["type"]]["document_id"] for x in lines[1:]]
    assert order == sorted(order, key=order.index) and len({*order}) == 2
    assert [x["type"] for x in lines[1:3]] == ["document", "links"]
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    without = env.export("t1", "alice")
    assert not any(r.chunk.vector for r in without if r.WhichOneof("record") == "chunk")


def test_export_tool_writes_the_file_from_a_running_server(env: Env, tmp_path: Path) -> None:
    out, audit = tmp_path / "bob.jsonl", tmp_path / "tool-audit.jsonl"
    assert gdpr_cli(["export", "--address", env.handle.address, "--tenant", "t1", "--owner", "bob",
                      "--out", str(out), "--audit-log", str(audit)]) == 0
    lines = list(read_jsonl(out))
    assert {x["document"]["document_id"] for x in lines if x["type"] == "document"} == {"bob-notes"}
    # Each document's outgoing knowledge-graph links follow it (a plain-text note has none).
    assert [x["links"] for x in lines if x["type"] == "links"] == [{"document_id": "bob-notes", "outgoing": []}]
    [event] = list(read_audit_log(audit))
    assert event["action"] == "gdpr.export_owner_file" and event["outcome"] == "ok" and event["documents"] == 1
    assert "bob" in event["target"] and "Section" not in json.dumps(event)


def test_export_stream_carries_each_documents_outgoing_links_and_the_file_keeps_them(env: Env, tmp_path: Path) -> None:
    note = "# Carol's plan\n\nSee [[bob-notes]] and the [[Missing Page]] first.\n\n" + paragraphs("carol", 2)
    env.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id="i-carol", tenant_id="t1", document_id="carol-plan", owner_id="carol", content=note,
        source="carol-plan.md", content_type="text/markdown"), timeout=120)
    records = env.export("t1", "carol")
    kinds = [r.WhichOneof("record") for r in records]
    assert kinds[:2] == ["document", "links"] and set(kinds[2:]) == {"chunk"}, kinds
    links = records[1].links
    assert links.document_id == "carol-plan"
    edges = {(e.target, e.target_document_id) for e in links.outgoing}
    # Resolved where a document has the name (in this tenant), dangling otherwise; the same as ListLinks gives.
    assert edges == {("bob-notes", "bob-notes"), ("Missing Page", "")}, edges
    listed = env.stub.ListLinks(freki_pb2.LinkListRequest(request_id="l", tenant_id="t1", document_id="carol-plan"),
                                timeout=30)
    assert list(listed.outgoing) == list(links.outgoing)
    out = tmp_path / "carol.jsonl"
    assert gdpr_cli(["export", "--address", env.handle.address, "--tenant", "t1", "--owner", "carol",
                      "--out", str(out)]) == 0
    [line] = [x["links"] for x in read_jsonl(out) if x["type"] == "links"]
    assert line["document_id"] == "carol-plan"
    assert {(e["target"], e.get("target_document_id", "")) for e in line["outgoing"]} == edges
    env.stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="d", tenant_id="t1", document_id="carol-plan"),
                            timeout=60)


def test_erasing_an_owner_leaves_nothing_retrievable_listable_or_exportable(env: Env) -> None:
    bob_before = env.engine.chunks.count([FieldMatch("owner_id", ("bob",))])
    other_tenant_before = env.engine.chunks.count([FieldMatch("tenant_id", ("t2",))])
    assert any(h.document_id.startswith("alice") for h in env.search("t1", "Where does Alice Example live?"))
    query_id = env.stub.RetrieveContext(common_pb2.WolfRequest(
        request_id="q", tenant_id="t1", model_type=common_pb2.RAG, prompt="Alice"), timeout=30).rag_context.query_id
    for doc_id, comment in (("alice-diary", "Alice's address is wrong"), ("bob-notes", "useful")):
        env.stub.RecordFeedback(freki_pb2.FeedbackRequest(request_id="f", tenant_id="t1", query_id=query_id,
                                                          document_id=doc_id, rating=4, comment=comment), timeout=30)

    response = env.stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(
        request_id="erase-alice", tenant_id="t1", owner_id="alice"), timeout=60)
    assert response.documents_deleted == 2 and response.chunks_deleted >= 2

    hits = env.search("t1", "Where does Alice Example live? Birch Lane badge number")
    assert hits and not any(h.document_id.startswith("alice") or "Birch" in h.content for h in hits)
    assert env.listed("t1", "alice") == [] and env.listed("t1") == ["bob-notes"]
    assert env.export("t1", "alice") == []
    with pytest.raises(grpc.RpcError) as info:
        env.stub.GetDocument(freki_pb2.GetDocumentRequest(tenant_id="t1", document_id="alice-diary"), timeout=30)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    assert env.engine.chunks.count([FieldMatch("tenant_id", ("t1",)), FieldMatch("owner_id", ("alice",))]) == 0
    cached = {key for key in env.engine.indexer.sentence_cache._docs if key[0] == "t1"}
    assert cached <= {("t1", "bob-notes")}, "cached sentence vectors of erased documents are dropped"
    # Everyone else is untouched.
    assert env.engine.chunks.count([FieldMatch("owner_id", ("bob",))]) == bob_before
    assert env.engine.chunks.count([FieldMatch("tenant_id", ("t2",))]) == other_tenant_before
    assert env.listed("t2", "alice") == ["alice-elsewhere"]
    assert any(h.document_id == "alice-elsewhere" for h in env.search("t2", "Alice Example another tenant"))
    # Erasing again finds nothing (and is not an error: the owner has no data).
    again = env.stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(
        request_id="erase-again", tenant_id="t1", owner_id="alice"), timeout=60)
    assert again.documents_deleted == 0 and again.chunks_deleted == 0
    # The feedback log keeps no rating or comment about an erased document.
    assert [line["document_id"] for line in feedback_lines(env, "t1")] == ["bob-notes"]


def feedback_lines(env: Env, tenant: str) -> list[dict]:
    return [json.loads(line) for line in log_path(env.engine.graph.feedback.folder, tenant).read_text().splitlines()]


def test_deleting_one_document_removes_it_everywhere(env: Env) -> None:
    env.stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(
        request_id="del-bob", tenant_id="t1", document_id="bob-notes"), timeout=60)
    assert env.listed("t1") == [] and env.export("t1", "bob") == []
    assert env.engine.chunks.count([FieldMatch("document_id", ("bob-notes",))]) == 0
    assert feedback_lines(env, "t1") == []
    with pytest.raises(grpc.RpcError) as info:
        env.stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(
            request_id="del-bob-2", tenant_id="t1", document_id="bob-notes"), timeout=60)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_erasure_and_export_are_audited_without_content(env: Env) -> None:
    events = list(read_audit_log(env.audit))
    actions = [e["action"] for e in events]
    assert "gdpr.erase_owner" in actions and "gdpr.export_owner" in actions, actions
    erase = next(e for e in events if e["action"] == "gdpr.erase_owner")
    assert "alice" in erase["target"] and erase["at"] and erase["actor"] and erase["outcome"]
    raw = env.audit.read_text()
    assert "Birch Lane" not in raw and "Section 1 about" not in raw, "the audit trail never holds content"
