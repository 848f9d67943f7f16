"""The knowledge graph over gRPC, with the real model and Qdrant engine: links and backlinks per tenant,
resolution as targets come and go, incremental edits, deletes and erasure, graph expansion, explanations
and the feedback log."""

from __future__ import annotations

import json
import uuid

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2

from freki.gdpr.cli import main as gdpr_cli
from freki.gdpr.export_file import read_jsonl
from freki.graph.feedback import log_path
from freki.ingest.parsing.links import Link
from freki.store import FieldMatch
from odin_client import OdinClient, OdinSettings
from tests.freki.api.test_service import index, retrieve, rid

pytestmark = pytest.mark.integration

REACTOR = """---
title: Zorblat Reactor
---
# Zorblat Reactor

The zorblat reactor in hall seven needs a special coolant to run; see [[Coolant Spec|its coolant]].
It is started by the procedure in [[rel:depends_on Ignition Procedure]] and documented in
[the manual](manuals/reactor-manual.md). Ignore `[[Not A Link]]`.

> [!edge] related_to: [[Hall Seven]]
"""
COOLANT = """---
title: Coolant Spec
aliases: [coolant]
---
# Coolant Spec

Liquid helium cooled to four kelvin, delivered in blue dewars every Monday morning.
"""
DISTRACTORS = {
    "baking.md": "Sourdough bread needs a starter, flour, water and salt, and a long cold proof overnight.",
    "fridge.md": "The office fridge is cleaned every Friday; label your lunch box with your name.",
    "hall.md": "# Hall Eight\n\nHall eight stores spare parts for the loading cranes and forklifts.",
}


def links(stub, doc_id: str, tenant: str = "", page_size: int = 0) -> freki_pb2.LinkListResponse:  # type: ignore[no-untyped-def]
    return stub.ListLinks(freki_pb2.LinkListRequest(request_id=rid(), tenant_id=tenant, document_id=doc_id,
                                                    page_size=page_size), timeout=30)


def outgoing(stub, doc_id: str, tenant: str = "") -> dict[str, tuple[str, str, float]]:  # type: ignore[no-untyped-def]
    found = links(stub, doc_id, tenant).outgoing
    return {e.target: (e.target_document_id, e.kind, round(e.confidence, 2)) for e in found}


@pytest.fixture(scope="module")
def graph_corpus(freki_stub):  # type: ignore[no-untyped-def]
    index(freki_stub, "notes/reactor.md", REACTOR, source="notes/reactor.md", owner_id="alice")
    index(freki_stub, "notes/coolant.md", COOLANT, source="notes/coolant.md", owner_id="bob")
    for doc_id, text in DISTRACTORS.items():
        index(freki_stub, doc_id, text, source=doc_id)
    return freki_stub


def test_links_resolve_by_title_alias_and_path_and_dangle_until_their_target_arrives(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub = graph_corpus
    assert outgoing(stub, "notes/reactor.md") == {
        "Coolant Spec": ("notes/coolant.md", "references", 1.0),
        "Ignition Procedure": ("", "depends_on", 0.95),
        "manuals/reactor-manual.md": ("", "references", 1.0),
        "Hall Seven": ("", "related_to", 0.9),
    }
    index(stub, "ignition", "# Ignition Procedure\n\nTurn the red key, then wait for the green lamp.")
    index(stub, "manual-doc", "Reactor manual: read before use.", source="notes/manuals/reactor-manual.md")
    now = outgoing(stub, "notes/reactor.md")
    assert now["Ignition Procedure"][0] == "ignition"  # by its title (first heading)
    assert now["manuals/reactor-manual.md"][0] == "manual-doc"  # relative path from notes/reactor.md
    back = links(stub, "notes/coolant.md").backlinks
    assert [(b.source_document_id, b.kind) for b in back] == [("notes/reactor.md", "references")]
    # Deleting the target makes the link dangle again; its own links go with it.
    stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id=rid(), document_id="ignition"), timeout=30)
    assert outgoing(stub, "notes/reactor.md")["Ignition Procedure"][0] == ""


def test_tenants_never_see_each_others_links(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub = graph_corpus
    with pytest.raises(grpc.RpcError) as err:
        links(stub, "notes/reactor.md", tenant="acme")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as err:
        links(stub, "notes/reactor.md", page_size=5000)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "page_size" in (err.value.details() or "")
    page = links(stub, "notes/reactor.md", page_size=1)
    assert len(page.outgoing) == 1 and page.truncated
    index(stub, "acme-note", "# Other\n\nSee [[Coolant Spec]].", tenant_id="acme")
    index(stub, "acme-hall", "# Hall Seven\n\nAcme's hall seven.", tenant_id="acme")
    assert outgoing(stub, "acme-note", "acme") == {"Coolant Spec": ("", "references", 1.0)}
    assert outgoing(stub, "notes/reactor.md")["Hall Seven"][0] == ""
    assert [b.source_document_id for b in links(stub, "notes/coolant.md").backlinks] == ["notes/reactor.md"]


def test_an_edit_replaces_the_documents_links(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub = graph_corpus
    index(stub, "editable", "# Editable\n\nPoints at [[Coolant Spec]].")
    assert "editable" in [b.source_document_id for b in links(stub, "notes/coolant.md").backlinks]
    index(stub, "editable", "# Editable\n\nPoints at [[Hall Eight]] now.")
    assert "editable" not in [b.source_document_id for b in links(stub, "notes/coolant.md").backlinks]
    assert outgoing(stub, "editable") == {"Hall Eight": ("hall.md", "references", 1.0)}


def test_links_of_an_uncommitted_version_are_never_read(graph_corpus, freki_server) -> None:  # type: ignore[no-untyped-def]
    _, engine = freki_server
    # What a crash between writing a version's links and committing its record leaves behind.
    engine.graph.links.write("default", "notes/coolant.md", "bob", "0" * 32, "notes/coolant.md", {},
                             [Link("Hall Eight", "references", 1.0, "explicit:wikilink")])
    assert outgoing(graph_corpus, "notes/coolant.md") == {}
    assert "notes/coolant.md" not in [b.source_document_id for b in links(graph_corpus, "hall.md").backlinks]
    # The start-up pass removes them (and nothing committed).
    before = engine.graph.links.store.count([])
    assert engine.graph.links.remove_orphans(lambda generation: True) == 2  # the version's node and its link
    assert engine.graph.links.store.count([]) == before - 2
    assert outgoing(graph_corpus, "notes/reactor.md")["Coolant Spec"][0] == "notes/coolant.md"


def test_expansion_brings_the_linked_answer_up_and_explain_says_why(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub = graph_corpus
    question = "What does the zorblat reactor in hall seven need to run?"
    plain = [d.document_id for d in retrieve(stub, question, top_k=3, score_threshold=0.0).rag_context.documents]
    expanded = retrieve(stub, question, top_k=3, score_threshold=0.0, graph_expand=True, explain=True).rag_context
    ids = [d.document_id for d in expanded.documents]
    assert plain[0] == ids[0] == "notes/reactor.md"
    assert ids.index("notes/coolant.md") < (plain.index("notes/coolant.md") if "notes/coolant.md" in plain else 3)
    coolant = next(d for d in expanded.documents if d.document_id == "notes/coolant.md").explanation
    assert coolant.graph_bonus > 0 and coolant.edge_bonus > 0
    assert [(e.source_document_id, e.target_document_id, e.kind) for e in coolant.edges] == [
        ("notes/reactor.md", "notes/coolant.md", "references")]
    top = expanded.documents[0].explanation
    assert {"zorblat", "reactor"} <= set(top.matched_terms)
    assert top.sparse_score > 0 and 0 < top.dense_score <= 1 and top.fused_score > 0
    assert uuid.UUID(expanded.query_id)
    # Without links (another tenant's isolated note), expansion changes nothing.
    index(stub, "lonely", "Solar panels convert sunlight into electricity.", tenant_id="solo")
    a = retrieve(stub, "sunlight electricity", tenant_id="solo", score_threshold=0.0).rag_context.documents
    b = retrieve(stub, "sunlight electricity", tenant_id="solo", score_threshold=0.0,
                 graph_expand=True).rag_context.documents
    assert [(d.chunk_id, d.relevance_score) for d in a] == [(d.chunk_id, d.relevance_score) for d in b]


def test_feedback_goes_to_the_tenants_log_and_bad_feedback_is_refused(graph_corpus, freki_server) -> None:  # type: ignore[no-untyped-def]
    stub = graph_corpus
    _, engine = freki_server
    query_id = retrieve(stub, "zorblat coolant", tenant_id="..").rag_context.query_id
    stub.RecordFeedback(freki_pb2.FeedbackRequest(request_id=rid(), tenant_id="..", query_id=query_id,
                                                  document_id="notes/coolant.md", rating=5, comment="spot on"))
    path = log_path(engine.graph.feedback.folder, "..")
    assert path.parent == engine.graph.feedback.folder
    line = json.loads(path.read_text().splitlines()[-1])
    assert (line["query_id"], line["document_id"], line["rating"], line["comment"]) == (
        query_id, "notes/coolant.md", 5, "spot on")
    for fields, named in [({"rating": 0}, "rating"), ({"rating": 6}, "rating"), ({"query_id": "x"}, "query_id"),
                          ({"comment": "x" * 2001}, "feedback_comment_max_chars")]:
        request = {"request_id": rid(), "query_id": query_id, "rating": 3, **fields}
        with pytest.raises(grpc.RpcError) as err:
            stub.RecordFeedback(freki_pb2.FeedbackRequest(**request), timeout=30)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and named in (err.value.details() or "")


def test_a_retried_feedback_request_is_recorded_once(graph_corpus, freki_server) -> None:  # type: ignore[no-untyped-def]
    """Odin retries RecordFeedback on UNAVAILABLE with the same request, which may have been written already (the
    connection dropped before the answer): the same request_id again appends nothing; a new one does."""
    stub = graph_corpus
    _, engine = freki_server
    query_id = retrieve(stub, "zorblat coolant", tenant_id="retry").rag_context.query_id
    request = freki_pb2.FeedbackRequest(request_id=rid(), tenant_id="retry", query_id=query_id, rating=2)
    first, again = stub.RecordFeedback(request, timeout=30), stub.RecordFeedback(request, timeout=30)
    assert first == again
    path = log_path(engine.graph.feedback.folder, "retry")
    assert len(path.read_text().splitlines()) == 1
    stub.RecordFeedback(freki_pb2.FeedbackRequest(request_id=rid(), tenant_id="retry", query_id=query_id, rating=2),
                        timeout=30)
    assert len(path.read_text().splitlines()) == 2  # the same rating again, asked for again: recorded


def test_the_export_tool_writes_each_documents_outgoing_links(graph_corpus, freki_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    out = tmp_path / "alice.jsonl"
    assert gdpr_cli(["export", "--address", handle.address, "--owner", "alice", "--out", str(out)]) == 0
    [entry] = [x["links"] for x in read_jsonl(out) if x["type"] == "links"]
    assert entry["document_id"] == "notes/reactor.md"
    assert {(e["target"], e.get("target_document_id", "")) for e in entry["outgoing"]} >= {
        ("Coolant Spec", "notes/coolant.md"), ("Hall Seven", "")}


def test_erasing_an_owner_erases_their_links(graph_corpus, freki_server) -> None:  # type: ignore[no-untyped-def]
    _, engine = freki_server
    owned = [FieldMatch("tenant_id", ("default",)), FieldMatch("owner_id", ("alice",))]
    assert engine.graph.links.store.count(owned) > 0
    graph_corpus.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id=rid(), owner_id="alice"), timeout=60)
    assert engine.graph.links.store.count(owned) == 0
    assert list(links(graph_corpus, "notes/coolant.md").backlinks) == []


def test_odin_client_lists_links_explains_and_records_feedback(graph_corpus, freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, engine = freki_server
    with OdinClient(OdinSettings(freki_target=handle.address)) as client:
        found = client.retrieve("zorblat coolant", top_k=2, score_threshold=0.0, graph_expand=True, explain=True)
        assert all(d.HasField("explanation") for d in found.context.documents)
        assert client.list_links("notes/coolant.md").document_id == "notes/coolant.md"
        done = client.record_feedback(found.context.query_id, 4, document_id="notes/coolant.md", comment="ok")
        assert done.rating == 4
    assert '"rating": 4' in log_path(engine.graph.feedback.folder, "default").read_text()


def test_expansion_and_explain_never_name_a_document_outside_the_callers_filter_or_scope(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub, tenant = graph_corpus, "scoped"
    index(stub, "pub.md", "# Public Note\n\nThe rocket budget is split in [[Private Salaries]].", tenant_id=tenant,
          metadata={"level": "public"})
    index(stub, "priv.md", "# Private Salaries\n\nThe rocket budget: salaries of every engineer.", tenant_id=tenant,
          metadata={"level": "secret"})
    index(stub, "back.md", "# Back\n\nRocket budget notes, see [[Public Note]].", tenant_id=tenant,
          metadata={"level": "secret"})
    public = [common_pb2.MetadataFilter(key="level", values=["public"])]
    for scope in ({"filters": public}, {"document_ids": ["pub.md"]}, {"filters": public, "mmr_diversity": 0.5},
                  {"filters": public, "query_variants": ["engineer salaries"], "top_k": 1000}):
        found = retrieve(stub, "rocket budget salaries", tenant_id=tenant, score_threshold=0.0, graph_expand=True,
                         explain=True, **scope).rag_context.documents
        assert [d.document_id for d in found] == ["pub.md"], scope
        explanation = found[0].explanation
        assert list(explanation.edges) == [] and explanation.centrality == 0.0, scope
    # Unscoped, the same links do count (the filter, not the graph, hid them).
    found = retrieve(stub, "rocket budget salaries", tenant_id=tenant, score_threshold=0.0, graph_expand=True,
                     explain=True).rag_context.documents
    assert {(e.source_document_id, e.target_document_id) for d in found for e in d.explanation.edges} == {
        ("pub.md", "priv.md"), ("back.md", "pub.md")}


def test_a_link_to_a_name_two_documents_share_counts_for_one_of_them_everywhere(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub, tenant = graph_corpus, "dupes"
    index(stub, "one.md", "# Same\n\nThe first granite quarry note.", source="one.md", tenant_id=tenant)
    index(stub, "two.md", "# Same\n\nThe second granite quarry note.", source="two.md", tenant_id=tenant)
    index(stub, "linker.md", "# Linker\n\nGranite quarry index: [[Same]].", source="linker.md", tenant_id=tenant)
    [edge] = links(stub, "linker.md", tenant).outgoing
    chosen = edge.target_document_id
    other = ({"one.md", "two.md"} - {chosen}).pop()
    assert [b.source_document_id for b in links(stub, chosen, tenant).backlinks] == ["linker.md"]
    assert list(links(stub, other, tenant).backlinks) == []
    found = retrieve(stub, "granite quarry note", tenant_id=tenant, score_threshold=0.0, graph_expand=True,
                     explain=True).rag_context.documents
    assert {(e.source_document_id, e.target_document_id) for d in found for e in d.explanation.edges} == {
        ("linker.md", chosen)}


def test_self_links_neither_show_as_backlinks_nor_hide_the_real_ones_from_a_page(graph_corpus) -> None:  # type: ignore[no-untyped-def]
    stub, tenant = graph_corpus, "selfish"
    variants = [''.join(c.upper() if i >> n & 1 else c for n, c in enumerate("selfy")) for i in range(32)]
    index(stub, "selfy.md", "# Selfy\n\n" + " ".join(f"[[{v}]]" for v in variants), source="selfy.md",
          tenant_id=tenant)
    for name in ("fan1.md", "fan2.md"):
        index(stub, name, f"# {name}\n\nA fan of [[Selfy]].", source=name, tenant_id=tenant)
    assert len(links(stub, "selfy.md", tenant, page_size=100).outgoing) == 32
    page = links(stub, "selfy.md", tenant, page_size=2)
    assert sorted(b.source_document_id for b in page.backlinks) == ["fan1.md", "fan2.md"]
    page = links(stub, "selfy.md", tenant, page_size=1)
    assert len(page.backlinks) == 1
