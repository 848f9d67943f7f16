"""Freki over gRPC with the real embedding model and the real embedded Qdrant engine."""

from __future__ import annotations

import time
import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import common_pb2, freki_pb2

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from tests.freki.api.corpus_support import ASTRO_DOC, BAKERY_DOC, GERI_DOC
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration


def rid() -> str:
    return uuid.uuid4().hex


def index(stub, doc_id: str, content: str, **kw) -> freki_pb2.IndexDocumentResponse:  # type: ignore[no-untyped-def]
    return stub.IndexDocument(
        freki_pb2.IndexDocumentRequest(request_id=rid(), document_id=doc_id, content=content, **kw), timeout=60
    )


def retrieve(stub, prompt: str, **retrieval) -> common_pb2.WolfResponse:  # type: ignore[no-untyped-def]
    tenant = retrieval.pop("tenant_id", "")
    return stub.RetrieveContext(
        common_pb2.WolfRequest(
            request_id=rid(), model_type=common_pb2.RAG, prompt=prompt, tenant_id=tenant,
            retrieval=common_pb2.RetrievalOptions(**retrieval),
        ),
        timeout=30,
    )


@pytest.fixture(scope="module")
def corpus(freki_stub):  # type: ignore[no-untyped-def]
    responses = {
        "geri.md": index(freki_stub, "geri.md", GERI_DOC, source="docs/geri.md"),
        "bread.md": index(freki_stub, "bread.md", BAKERY_DOC, source="docs/bread.md"),
        "jupiter.txt": index(freki_stub, "jupiter.txt", ASTRO_DOC, source="notes/jupiter.txt"),
    }
    return responses


def test_index_reports_chunks_and_creation(corpus) -> None:  # type: ignore[no-untyped-def]
    for resp in corpus.values():
        assert resp.outcome == freki_pb2.INDEX_OUTCOME_CREATED
        assert resp.changed
        assert resp.chunk_count >= 1
        assert resp.chunks_embedded == resp.chunk_count
        assert len(resp.content_hash) == 64


def test_retrieve_ranks_the_relevant_document_first(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    resp = retrieve(freki_stub, "Which TCP port does Geri listen on?", top_k=3)
    docs = resp.rag_context.documents
    assert resp.request_id and resp.model_type == common_pb2.RAG
    assert docs[0].document_id == "geri.md"
    assert "50051" in docs[0].content
    scores = [d.relevance_score for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert resp.rag_context.retrieval_score == pytest.approx(sum(scores) / len(scores), rel=1e-5)
    assert resp.metadata.timestamp.seconds > 0


def test_results_carry_frontmatter_and_section_metadata(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    doc = retrieve(freki_stub, "how often to feed a sourdough starter", top_k=1).rag_context.documents[0]
    assert doc.document_id == "bread.md"
    assert doc.metadata["team"] == "kitchen"
    assert doc.metadata["title"] == "Sourdough notes"
    assert "Starter" in doc.metadata["section"]
    assert doc.source == "docs/bread.md"


def test_metadata_filter_restricts_results(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    flt = common_pb2.MetadataFilter(key="team", values=["kitchen"])
    docs = retrieve(freki_stub, "Which TCP port does Geri listen on?", top_k=10, filters=[flt],
                    score_threshold=0.0).rag_context.documents  # the filter is tested, not relevance
    assert docs and {d.document_id for d in docs} == {"bread.md"}
    excl = common_pb2.MetadataFilter(key="team", values=["kitchen"], exclude=True)
    docs = retrieve(freki_stub, "sourdough starter", top_k=10, filters=[excl]).rag_context.documents
    assert "bread.md" not in {d.document_id for d in docs}


def test_score_threshold_is_a_minimum(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    loose = retrieve(freki_stub, "largest moon of Jupiter", top_k=10, score_threshold=0.0).rag_context.documents
    strict = retrieve(freki_stub, "largest moon of Jupiter", top_k=10, score_threshold=0.45).rag_context.documents
    assert len(strict) < len(loose)
    assert strict and all(d.relevance_score >= 0.45 for d in strict)
    none = retrieve(freki_stub, "largest moon of Jupiter", top_k=10, score_threshold=0.99).rag_context
    assert list(none.documents) == [] and none.below_threshold == len(loose)
    assert none.score_threshold == pytest.approx(0.99)


@pytest.mark.parametrize(("mode", "threshold"), [
    (common_pb2.SEARCH_MODE_UNSPECIFIED, 0.2), (common_pb2.SEARCH_MODE_HYBRID, 0.2),
    (common_pb2.SEARCH_MODE_DENSE, 0.25), (common_pb2.SEARCH_MODE_SPARSE, 0.0)])
def test_unrelated_questions_find_nothing_and_say_so(freki_stub, corpus, mode, threshold) -> None:  # type: ignore[no-untyped-def]
    """The default threshold per mode (retrieval.mode_thresholds, scripts/eval/thresholds.py) keeps an
    unrelated question's matches out, and the reply says how many it removed."""
    ctx = retrieve(freki_stub, "What is the capital of Mongolia and who founded it?", top_k=3, mode=mode).rag_context
    assert ctx.score_threshold == pytest.approx(threshold)
    if threshold:
        assert list(ctx.documents) == [] and ctx.below_threshold == 3
    related = retrieve(freki_stub, "Which TCP port does Geri listen on?", top_k=3, mode=mode).rag_context
    assert related.documents[0].document_id == "geri.md"


def test_reindexing_unchanged_content_is_a_noop(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    before = freki_stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest())
    again = index(freki_stub, "geri.md", GERI_DOC, source="docs/geri.md")
    after = freki_stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest())
    assert again.outcome == freki_pb2.INDEX_OUTCOME_UNCHANGED
    assert not again.changed and again.chunks_embedded == 0
    assert after.chunk_count == before.chunk_count and after.document_count == before.document_count


def test_tenants_never_see_each_other(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    index(freki_stub, "secret.md", "The vault code of tenant acme is 7741. Nobody else may read it.",
          tenant_id="acme")
    mine = retrieve(freki_stub, "vault code", top_k=5, tenant_id="acme").rag_context.documents
    assert [d.document_id for d in mine] == ["secret.md"]
    theirs = retrieve(freki_stub, "vault code of tenant acme", top_k=50).rag_context.documents
    assert "secret.md" not in {d.document_id for d in theirs}
    with pytest.raises(grpc.RpcError) as err:
        freki_stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="secret.md", tenant_id="globex"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_get_list_and_delete_document(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    index(freki_stub, "temp.txt", "Temporary note about quarterly budget planning and spreadsheets.")
    info = freki_stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="temp.txt"))
    assert info.chunk_count >= 1 and info.embedding_model == "all-MiniLM-L6-v2"
    listed = freki_stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100))
    assert "temp.txt" in {d.document_id for d in listed.documents}
    deleted = freki_stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id=rid(), document_id="temp.txt"))
    assert deleted.chunks_deleted == info.chunk_count
    docs = retrieve(freki_stub, "quarterly budget spreadsheets", top_k=10).rag_context.documents
    assert "temp.txt" not in {d.document_id for d in docs}
    with pytest.raises(grpc.RpcError) as err:
        freki_stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id=rid(), document_id="temp.txt"))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_list_documents_pages(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    seen: list[str] = []
    token = ""
    while True:
        page = freki_stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=1, page_token=token))
        assert len(page.documents) <= 1
        seen.extend(d.document_id for d in page.documents)
        token = page.next_page_token
        if not token:
            break
    assert {"geri.md", "bread.md", "jupiter.txt"} <= set(seen)
    assert len(seen) == len(set(seen))


BAD_RETRIEVE = [
    (dict(request_id="", model_type=common_pb2.RAG, prompt="q"), "request_id"),
    (dict(request_id="r", model_type=common_pb2.LLM, prompt="q"), "model_type"),
    (dict(request_id="r", model_type=common_pb2.RAG, prompt=""), "prompt"),
    (dict(request_id="r", model_type=common_pb2.RAG, prompt="x" * 1_000_001), "prompt"),
    (dict(request_id="r", model_type=common_pb2.RAG, prompt="q",
          retrieval=common_pb2.RetrievalOptions(top_k=-1)), "top_k"),
    (dict(request_id="r", model_type=common_pb2.RAG, prompt="q",
          retrieval=common_pb2.RetrievalOptions(score_threshold=1.5)), "score_threshold"),
    (dict(request_id="r", model_type=common_pb2.RAG, prompt="q", tenant_id="bad tenant!"), "tenant_id"),
]


@pytest.mark.parametrize(("fields", "named"), BAD_RETRIEVE)
def test_bad_retrieve_requests_name_the_field(freki_stub, fields, named) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        freki_stub.RetrieveContext(common_pb2.WolfRequest(**fields), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert named in err.value.details()


BAD_INDEX = [
    (dict(request_id="", document_id="d", content="x"), "request_id"),
    (dict(request_id="r", document_id="", content="x"), "document_id"),
    (dict(request_id="r", document_id="d", content=""), "content"),
    (dict(request_id="r", document_id="d", content="x", content_bytes=b"x"), "content_bytes"),
    (dict(request_id="r", document_id="d", content="x", metadata={"bad key": "v"}), "metadata"),
    (dict(request_id="r", document_id="d", content_bytes=b"%PDF-1.4 garbage", content_type="pdf"), "PDF"),
]


@pytest.mark.parametrize(("fields", "named"), BAD_INDEX)
def test_bad_index_requests_change_nothing(freki_stub, corpus, fields, named) -> None:  # type: ignore[no-untyped-def]
    before = freki_stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest())
    with pytest.raises(grpc.RpcError) as err:
        freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(**fields), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert named.lower() in err.value.details().lower()
    after = freki_stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest())
    assert (after.document_count, after.chunk_count) == (before.document_count, before.chunk_count)


def test_corrupt_reindex_keeps_the_previous_version(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=rid(), document_id="jupiter.txt", content_bytes=b"\x00\x01\x02binary\xff" * 50,
        ), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    docs = retrieve(freki_stub, "Great Red Spot storm", top_k=1).rag_context.documents
    assert docs[0].document_id == "jupiter.txt" and "Red Spot" in docs[0].content


def test_no_chunk_exceeds_the_model_window(freki_stub, freki_server) -> None:  # type: ignore[no-untyped-def]
    _, engine = freki_server
    paragraphs = [
        f"Section {i} explains topic {i}. "
        + " ".join(f"Detail {i}.{j} covers item {j} of topic {i}." for j in range(40))
        for i in range(6)
    ]
    resp = index(freki_stub, "long.txt", "\n\n".join(paragraphs))
    assert resp.chunk_count > 3
    for point in engine.chunks_of("default", "long.txt"):
        text = point.payload["content"]
        assert engine.embedder.window_tokens(text) <= engine.embedder.max_seq_length, text[:80]


def test_health_reports_serving(freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    with grpc.insecure_channel(handle.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "wolf.v1.FrekiService"):
            resp = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING


def test_a_changed_embedding_model_serves_the_old_index_and_a_failed_migration_changes_nothing(  # type: ignore[no-untyped-def]
        tmp_path, embedder) -> None:
    settings = freki_settings(tmp_path)
    engine = FrekiEngine(settings, embedder=embedder)
    engine.index(IndexInput(tenant_id="default", document_id="a.md", data="Quokkas smile for photographs."))
    engine.close()
    engine = FrekiEngine(freki_settings(tmp_path, embedding_model="/nonexistent/model"), embedder=embedder)
    try:
        status = engine.status(None)
        assert (status.embedding_model, status.configured_model) == ("all-MiniLM-L6-v2", "/nonexistent/model")
        engine.blue_green.start()
        deadline = time.monotonic() + 60
        while (migration := engine.blue_green.status()) is not None and migration.state != "failed":
            assert time.monotonic() < deadline, migration
            time.sleep(0.05)
        assert migration is not None and "cannot load embedding model '/nonexistent/model'" in migration.error
        assert engine.status(None).embedding_model == "all-MiniLM-L6-v2" and engine.get_document("default", "a.md")
    finally:
        engine.close()


ODD_IDS = ["faq/design#why", "notes~1", "50% off?.md", "Übersicht 2026", "設計/概要.md", "a\\b", "  spaced  ",
           "emoji 👩‍💻 (zwj)", "x" * 1000 + ".md"]


@pytest.mark.parametrize("doc_id", ODD_IDS)
def test_any_printable_id_round_trips_through_index_get_list_retrieve_export_delete(  # type: ignore[no-untyped-def]
        freki_stub, doc_id: str) -> None:
    tenant = "odd-ids"
    index(freki_stub, doc_id, "Quokkas on Rottnest island smile for photographs.", tenant_id=tenant,
          owner_id="olga")
    assert freki_stub.GetDocument(freki_pb2.GetDocumentRequest(document_id=doc_id, tenant_id=tenant)).document_id \
        == doc_id
    listed = freki_stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100, tenant_id=tenant))
    assert [d.document_id for d in listed.documents] == [doc_id]
    hits = retrieve(freki_stub, "quokka photographs", top_k=1, tenant_id=tenant, document_ids=[doc_id])
    assert [d.document_id for d in hits.rag_context.documents] == [doc_id]
    export = list(freki_stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(
        request_id=rid(), tenant_id=tenant, owner_id="olga"), timeout=30))
    assert doc_id in {r.document.document_id for r in export if r.HasField("document")}
    freki_stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id=rid(), document_id=doc_id, tenant_id=tenant))
    assert not freki_stub.ListDocuments(freki_pb2.ListDocumentsRequest(tenant_id=tenant)).documents


@pytest.mark.parametrize(("doc_id", "says"), [
    ("tab\there", "U+0009"), ("nul\x00", "U+0000"), ("rtl\u202eevil", "U+202E"), ("   ", "only whitespace"),
    ("y" * 1025, "1,025 UTF-8 bytes, over the limit of 1,024")])
def test_unprintable_ids_are_refused_naming_the_character(freki_stub, doc_id: str, says: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        index(freki_stub, doc_id, "text")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and says in err.value.details()


def test_embed_returns_unit_vectors_of_the_index_model_and_refuses_too_much(freki_stub) -> None:  # type: ignore[no-untyped-def]
    resp = freki_stub.Embed(freki_pb2.EmbedRequest(request_id=rid(), texts=["a cat", "a cat", "tax law"]))
    assert resp.model == "all-MiniLM-L6-v2" and resp.dimension == 384 and len(resp.embeddings) == 3
    a, b, c = (list(e.values) for e in resp.embeddings)
    assert a == b and len(a) == 384 and abs(sum(x * x for x in a) - 1.0) < 1e-4
    assert sum(x * y for x, y in zip(a, c, strict=True)) < 0.5 and resp.prompt_tokens >= 6
    for texts, code, says in ((["x"] * 65, grpc.StatusCode.RESOURCE_EXHAUSTED, "limits.embed_max_texts (64)"),
                              (["y" * 9000], grpc.StatusCode.RESOURCE_EXHAUSTED, "limits.embed_max_chars (8,192)"),
                              ([], grpc.StatusCode.INVALID_ARGUMENT, "at least one text"),
                              (["ok", " "], grpc.StatusCode.INVALID_ARGUMENT, "texts[1] is empty")):
        with pytest.raises(grpc.RpcError) as err:
            freki_stub.Embed(freki_pb2.EmbedRequest(request_id=rid(), texts=texts))
        assert err.value.code() == code and says in err.value.details()


def test_a_request_over_max_message_bytes_is_refused_by_size(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    """The gRPC message limit is a setting: a document over it gets RESOURCE_EXHAUSTED; one under it is indexed."""
    from wolf.v1 import freki_pb2_grpc

    from freki.api.server import build_server

    settings = freki_settings(tmp_path, max_message_bytes=1024 * 1024)
    engine = FrekiEngine(settings, embedder=embedder)
    handle, engine = build_server(settings, engine=engine)
    channel = grpc.insecure_channel(handle.address, options=[("grpc.max_send_message_length", 8 << 20)])
    try:
        stub = freki_pb2_grpc.FrekiServiceStub(channel)
        big = "Harbour lights burn whale oil. " * (2 * 1024 * 1024 // 31)
        with pytest.raises(grpc.RpcError) as refused:
            index(stub, "big", big)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "1048576" in (refused.value.details() or ""), refused.value.details()
        assert index(stub, "small", big[:2_000]).chunk_count > 0
    finally:
        channel.close()
        handle.stop(0.5)
        engine.close()


def test_a_chunk_says_where_it_sits_page_and_headings(freki_stub, corpus) -> None:  # type: ignore[no-untyped-def]
    from tests.freki.ingest.test_parsing_binary import build_pdf

    pdf = build_pdf([["The cover page names the lessor and the tenant of the flat."],
                     ["The monthly rent of the flat is 950 euros, due on the third working day."]])
    index_pdf = freki_pb2.IndexDocumentRequest(request_id=rid(), document_id="lease.pdf", content_bytes=pdf,
                                               source="contracts/lease.pdf")
    freki_stub.IndexDocument(index_pdf, timeout=60)
    top = retrieve(freki_stub, "monthly rent of the flat", top_k=1, document_ids=["lease.pdf"]).rag_context.documents[0]
    assert (top.location.page, top.location.label) == (2, "p. 2")
    md = retrieve(freki_stub, "Which port does Geri listen on?", top_k=1).rag_context.documents[0]
    assert md.document_id == "geri.md"
    assert md.location.page == 0 and list(md.location.heading_path)
    assert md.location.label == " > ".join(md.location.heading_path) == md.metadata["section"]


def test_german_document_shows_its_language_and_a_german_query_finds_it(freki_stub) -> None:  # type: ignore[no-untyped-def]
    text = ("Die Kaltmiete der Wohnung beträgt 950 Euro im Monat. Haustiere sind nach Absprache erlaubt, "
            "die Nebenkosten werden jährlich abgerechnet.")
    index(freki_stub, "expose-de.txt", text, tenant_id="immo")
    info = freki_stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="expose-de.txt", tenant_id="immo"))
    assert list(info.languages) == ["de"]
    request = common_pb2.WolfRequest(
        request_id=rid(), model_type=common_pb2.RAG, prompt="Haustieren", tenant_id="immo",
        metadata=common_pb2.RequestMetadata(language="de"),
        retrieval=common_pb2.RetrievalOptions(mode=common_pb2.SEARCH_MODE_SPARSE, top_k=3))
    docs = freki_stub.RetrieveContext(request, timeout=30).rag_context.documents
    assert [d.document_id for d in docs] == ["expose-de.txt"]  # "Haustieren" meets "Haustiere" only in German
    assert docs[0].metadata["language"] == "de"
