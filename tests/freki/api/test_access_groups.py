"""Access groups inside a tenant on a real Freki (real model, embedded Qdrant engine): one agent's key never
reads, counts, links to or overwrites another agent's private documents, whatever read path it takes; a key
cannot widen its own groups. docs/decisions/0261-access-inside-a-tenant.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from tests.freki.api.test_service import rid
from tests.freki.conftest import freki_settings
from wolf_service.audit_log import read_audit_log
from wolf_service.auth import hash_key

pytestmark = pytest.mark.integration

KEYS = {"admin": "immo-admin-key-0123456789", "agent-a": "immo-agent-a-key-0123456789",
        "agent-b": "immo-agent-b-key-0123456789", "auditor-a": "immo-auditor-a-key-0123456789"}
A_PRIVATE = """---
title: Villa Sonnenhang
---
# Villa Sonnenhang

The seller of Villa Sonnenhang accepts 1.2 million euros; compare with [[Penthouse Elbblick]].
"""
B_PRIVATE = """---
title: Penthouse Elbblick
---
# Penthouse Elbblick

Confidential: the Penthouse Elbblick owners divorce and accept 3.4 million euros. See [[Viewing Guide]].
"""
SHARED = "# Viewing Guide\n\nViewing appointments for every property are booked through the front desk."
HIDDEN_PROBE = "Penthouse Elbblick divorce confidential 3.4 million"


def key(name: str, groups: list[str] | None, scopes: list[str] | None = None) -> dict[str, object]:
    return {"name": name, "tenant": "immo", "sha256": hash_key(KEYS[name]), "access_groups": groups,
            "scopes": scopes}


def as_(name: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {KEYS[name]}"), ("x-wolf-user", f"{name}-user"))


Served = tuple[freki_pb2_grpc.FrekiServiceStub, Path]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    data = tmp_path_factory.mktemp("access")
    settings = freki_settings(data, search_log={"enabled": True}, security={"api_keys": [
        key("admin", None), key("agent-a", ["team-a"], ["read", "write", "delete"]),
        key("agent-b", ["team-b"], ["read", "write", "delete"]), key("auditor-a", ["team-a"], ["admin"])]})
    engine = FrekiEngine(settings, embedder=embedder)
    handle, engine = build_server(settings, engine=engine)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            for doc_id, text, groups, who in (("a-private", A_PRIVATE, ["team-a"], "agent-a"),
                                              ("b-private", B_PRIVATE, ["team-b"], "agent-b"),
                                              ("shared", SHARED, [], "admin")):
                stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id=rid(), document_id=doc_id, content=text, source=f"{doc_id}.md", owner_id="seller-1",
                    content_type="markdown", access_groups=groups), metadata=as_(who), timeout=60)
            yield stub, data
    finally:
        handle.stop(1.0)
        engine.close()


def retrieve(stub, who: str, prompt: str, mode: int, **options) -> common_pb2.RAGContext:  # type: ignore[no-untyped-def]
    request = common_pb2.WolfRequest(request_id=rid(), model_type=common_pb2.RAG, prompt=prompt,
                                     retrieval=common_pb2.RetrievalOptions(mode=mode, top_k=10, score_threshold=0.0,
                                                                           **options))
    return stub.RetrieveContext(request, metadata=as_(who), timeout=30).rag_context


def refused(call, *args, **kwargs) -> grpc.RpcError:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        call(*args, **kwargs)
    return err.value


@pytest.mark.parametrize("mode", [common_pb2.SEARCH_MODE_DENSE, common_pb2.SEARCH_MODE_SPARSE,
                                  common_pb2.SEARCH_MODE_HYBRID])
def test_a_probe_for_a_hidden_document_gets_what_excluding_it_would_give(server, mode: int) -> None:  # type: ignore[no-untyped-def]
    stub, _ = server
    admin = retrieve(stub, "admin", HIDDEN_PROBE, mode)
    assert "b-private" in {d.document_id for d in admin.documents}  # the probe does find it for the admin
    agent = retrieve(stub, "agent-a", HIDDEN_PROBE, mode, graph_expand=True, explain=True, neighbours=2)
    assert "b-private" not in {d.document_id for d in agent.documents}
    # Same ids, scores and counts as the admin asking without the hidden document: nothing in the answer
    # (order, scores, below_threshold) depends on it beyond the tenant's shared term statistics.
    excluded = retrieve(stub, "admin", HIDDEN_PROBE, mode, graph_expand=True, explain=True, neighbours=2, filters=[
        common_pb2.MetadataFilter(key="@document_id", values=["b-private"], exclude=True)])
    assert [(d.document_id, round(d.relevance_score, 5)) for d in agent.documents] == \
        [(d.document_id, round(d.relevance_score, 5)) for d in excluded.documents]
    assert agent.below_threshold == excluded.below_threshold
    for doc in agent.documents:  # explanations name no hidden document either
        assert all("b-private" not in (e.source_document_id, e.target_document_id) for e in doc.explanation.edges)


def test_get_list_links_status_and_export_skip_hidden_documents(server) -> None:  # type: ignore[no-untyped-def]
    stub, _ = server
    hidden = refused(stub.GetDocument, freki_pb2.GetDocumentRequest(document_id="b-private"), metadata=as_("agent-a"))
    missing = refused(stub.GetDocument, freki_pb2.GetDocumentRequest(document_id="b-privatX"), metadata=as_("agent-a"))
    assert hidden.code() == missing.code() == grpc.StatusCode.NOT_FOUND
    assert hidden.details().replace("b-private", "b-privatX") == missing.details()  # indistinguishable
    mine = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="a-private"), metadata=as_("agent-a"))
    assert list(mine.access_groups) == ["team-a"]

    listed = stub.ListDocuments(freki_pb2.ListDocumentsRequest(), metadata=as_("agent-a"))
    assert sorted(d.document_id for d in listed.documents) == ["a-private", "shared"]
    assert len(stub.ListDocuments(freki_pb2.ListDocumentsRequest(), metadata=as_("admin")).documents) == 3

    # Links: the hidden target reads as dangling, the hidden document's backlink is not there.
    links = stub.ListLinks(freki_pb2.LinkListRequest(request_id=rid(), document_id="a-private"),
                           metadata=as_("agent-a"))
    assert {e.target: e.target_document_id for e in links.outgoing} == {"Penthouse Elbblick": ""}
    admin_links = stub.ListLinks(freki_pb2.LinkListRequest(request_id=rid(), document_id="a-private"),
                                 metadata=as_("admin"))
    assert {e.target: e.target_document_id for e in admin_links.outgoing} == {"Penthouse Elbblick": "b-private"}
    back = stub.ListLinks(freki_pb2.LinkListRequest(request_id=rid(), document_id="shared"), metadata=as_("agent-a"))
    assert [e.source_document_id for e in back.backlinks] == []
    back = stub.ListLinks(freki_pb2.LinkListRequest(request_id=rid(), document_id="shared"), metadata=as_("admin"))
    assert [e.source_document_id for e in back.backlinks] == ["b-private"]
    assert refused(stub.ListLinks, freki_pb2.LinkListRequest(request_id=rid(), document_id="b-private"),
                   metadata=as_("agent-a")).code() == grpc.StatusCode.NOT_FOUND

    # Counts: what the agent may read, not the tenant's total.
    agent = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), metadata=as_("agent-a"))
    admin = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), metadata=as_("admin"))
    assert (agent.document_count, admin.document_count) == (2, 3)
    visible = [stub.GetDocument(freki_pb2.GetDocumentRequest(document_id=d), metadata=as_("admin")).chunk_count
               for d in ("a-private", "shared")]
    assert agent.chunk_count == sum(visible) < admin.chunk_count
    assert sum(m.chunk_count for m in agent.embedding_models) == agent.chunk_count

    # An export by a group-restricted admin key holds only what it may read.
    export = list(stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(request_id=rid(), owner_id="seller-1"),
                                       metadata=as_("auditor-a"), timeout=60))
    exported = {r.document.document_id for r in export if r.HasField("document")}
    assert exported == {"a-private", "shared"}
    assert "3.4 million" not in str(export)

    # Re-indexing: a hidden document is missing to the key; a whole tenant (counts of everything) is refused.
    def reindex(doc_id: str) -> freki_pb2.FullReindexResponse:
        return stub.FullReindex(freki_pb2.FullReindexRequest(request_id=rid(), document_id=doc_id),
                                metadata=as_("auditor-a"), timeout=120)

    assert refused(reindex, "b-private").code() == grpc.StatusCode.NOT_FOUND
    assert refused(reindex, "").code() == grpc.StatusCode.PERMISSION_DENIED
    migrate = refused(stub.FullReindex, freki_pb2.FullReindexRequest(request_id=rid(), migrate_model=True),
                      metadata=as_("auditor-a"), timeout=60)  # re-embeds every document, hidden ones included
    assert migrate.code() == grpc.StatusCode.PERMISSION_DENIED, migrate.details()
    backup = refused(stub.CreateBackup, freki_pb2.CreateBackupRequest(request_id=rid()), metadata=as_("auditor-a"))
    assert backup.code() == grpc.StatusCode.PERMISSION_DENIED, backup.details()  # its reply counts every document
    assert reindex("a-private").documents_reindexed == 1
    after = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="a-private"), metadata=as_("admin"))
    assert list(after.access_groups) == ["team-a"]  # re-chunked from its kept source, groups kept
    assert refused(stub.GetDocument, freki_pb2.GetDocumentRequest(document_id="a-private"),
                   metadata=as_("agent-b")).code() == grpc.StatusCode.NOT_FOUND
    probe = retrieve(stub, "agent-b", "Villa Sonnenhang seller accepts", common_pb2.SEARCH_MODE_HYBRID)
    assert "a-private" not in {d.document_id for d in probe.documents}


def test_a_key_cannot_widen_its_groups_or_touch_another_groups_document(server) -> None:  # type: ignore[no-untyped-def]
    stub, data = server
    before = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="b-private"), metadata=as_("admin"))

    def index(doc_id: str, groups: list[str]) -> freki_pb2.IndexDocumentResponse:
        return stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=rid(), document_id=doc_id, content="Overwritten by agent A.", access_groups=groups),
            metadata=as_("agent-a"), timeout=60)

    err = refused(index, "a-new", ["team-a", "team-b"])  # writing into a group it lacks
    assert err.code() == grpc.StatusCode.PERMISSION_DENIED and "team-b" in err.details()
    assert refused(stub.GetDocument, freki_pb2.GetDocumentRequest(document_id="a-new"),
                   metadata=as_("admin")).code() == grpc.StatusCode.NOT_FOUND  # nothing was written
    for groups in ([], ["team-a"]):  # replacing the other group's document, to make it tenant-wide or its own
        assert refused(index, "b-private", groups).code() == grpc.StatusCode.PERMISSION_DENIED
    delete = freki_pb2.DeleteDocumentRequest(request_id=rid(), document_id="b-private")
    assert refused(stub.DeleteDocument, delete, metadata=as_("agent-a")).code() == grpc.StatusCode.NOT_FOUND
    erase = freki_pb2.DeleteOwnerDataRequest(request_id=rid(), owner_id="seller-1")
    assert refused(stub.DeleteOwnerData, erase, metadata=as_("agent-a")).code() == grpc.StatusCode.PERMISSION_DENIED
    bad = refused(index, "a-new", ["team a!"])
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT and "access_groups" in bad.details()
    after = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="b-private"), metadata=as_("admin"))
    assert after == before  # same hash, groups, chunks: untouched

    assert index("a-notes", ["team-a"]).outcome == freki_pb2.INDEX_OUTCOME_CREATED  # its own group: fine
    events = [e for e in read_audit_log(data / "audit.jsonl") if e["action"] == "freki.index_document"]
    refusals = [e for e in events if e["outcome"] == "permission_denied"]
    assert refusals and all(e["actor"] == "agent-a" and e["user"] == "agent-a-user" for e in refusals)


def test_an_export_shows_no_search_that_found_a_hidden_document(server) -> None:  # type: ignore[no-untyped-def]
    stub, _ = server
    for who, prompt in (("admin", HIDDEN_PROBE), ("agent-a", "Villa Sonnenhang seller price")):
        stub.RetrieveContext(common_pb2.WolfRequest(
            request_id=rid(), model_type=common_pb2.RAG, prompt=prompt,
            metadata=common_pb2.RequestMetadata(owner_id="seller-1"),
            retrieval=common_pb2.RetrievalOptions(top_k=10, score_threshold=0.0)), metadata=as_(who), timeout=30)

    def searches(who: str) -> list[freki_pb2.SearchLogEntry]:
        export = stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(request_id=rid(), owner_id="seller-1"),
                                      metadata=as_(who), timeout=60)
        return [r.search for r in export if r.HasField("search")]

    everything = searches("admin")
    assert "b-private" in {h.document_id for s in everything for h in s.hits}
    restricted = searches("auditor-a")
    # The search that found the hidden document is left out whole: its query may describe that document.
    assert "b-private" not in {h.document_id for s in restricted for h in s.hits}
    assert HIDDEN_PROBE not in {s.query for s in restricted}
    assert "Villa Sonnenhang seller price" in {s.query for s in restricted}
