"""Attacks on a real Freki: every hostile document or request gets a clear error naming what was wrong, the
server stays healthy, and the tenant is unharmed (its canary document is still found; ListDocuments works)."""

from __future__ import annotations

import uuid

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import common_pb2, freki_pb2

from tests.freki.api.hostile_documents_support import (
    ALIAS_BOMB,
    cases,
    declared_slides_pptx,
    locked_pptx,
    many_page_pdf,
)

pytestmark = pytest.mark.integration

CANARY = "The heliograph relay on Skaldfell ridge flashes its beacon every ninety seconds at dusk."


@pytest.fixture(scope="module")
def canary(freki_stub):  # type: ignore[no-untyped-def]
    freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id="canary", document_id="canary.txt", content=CANARY), timeout=60)
    return freki_stub


def assert_tenant_unharmed(stub, address: str) -> None:  # type: ignore[no-untyped-def]
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    docs = stub.RetrieveContext(common_pb2.WolfRequest(
        request_id="q", model_type=common_pb2.RAG, prompt="How often does the Skaldfell heliograph flash?",
        retrieval=common_pb2.RetrievalOptions(top_k=1)), timeout=30).rag_context.documents
    assert docs and docs[0].document_id == "canary.txt"
    listed = stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100), timeout=30).documents
    assert [d.document_id for d in listed] == ["canary.txt"], "nothing hostile was committed"


@pytest.mark.parametrize(("name", "fields", "code", "phrase"), cases(), ids=[c[0] for c in cases()])
def test_hostile_document_is_refused_and_the_tenant_unharmed(  # type: ignore[no-untyped-def]
    canary, freki_server, name: str, fields: dict, code: grpc.StatusCode, phrase: str,
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        canary.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=f"hostile-{name}", document_id=name, source=name, **fields), timeout=120)
    assert caught.value.code() == code, caught.value.details()
    details = caught.value.details()
    assert any(p in details for p in phrase.split("|")), details
    assert len(details) < 600, "errors never echo the input"
    assert_tenant_unharmed(canary, freki_server[0].address)


def test_the_watched_folder_skips_the_same_files_with_their_reasons(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    from tests.freki.ingest.scanned_documents_support import encode, png_header_only, text_image
    from tests.freki.watch.conftest import settle, start_watched

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "alias-bomb.md").write_text(ALIAS_BOMB)
    (folder / "pages.pdf").write_bytes(many_page_pdf(100_000))
    (folder / "declared.pptx").write_bytes(declared_slides_pptx(100_000))
    (folder / "locked.pptx").write_bytes(locked_pptx())
    (folder / "bomb.png").write_bytes(png_header_only(100_000, 100_000))
    (folder / "report.pdf").write_bytes(encode([text_image(["not a PDF at all"])], "PNG"))
    (folder / "ok.md").write_text("# Fine\n\nA perfectly ordinary note about ravens.")
    bundle, stop = start_watched(folder, tmp_path / "data", embedder)
    try:
        settle(bundle.watcher)
        skipped = {s.path.rsplit("/", 1)[-1]: s.reason for s in bundle.status().watch_folders[0].skipped}
        assert "anchor" in skipped["alias-bomb.md"], skipped
        assert "limits.pdf_max_pages" in skipped["pages.pdf"], skipped
        assert "limits.pptx_max_slides" in skipped["declared.pptx"], skipped
        assert "password-protected" in skipped["locked.pptx"], skipped
        assert "limits.ocr_max_pixels" in skipped["bomb.png"], skipped
        assert bundle.doc_ids() == {"docs/ok.md", "docs/report.pdf"}, "a PNG named .pdf is read as the image it is"
    finally:
        stop()


def test_requests_never_echo_unbounded_input(canary, freki_server) -> None:  # type: ignore[no-untyped-def]
    token = "x" * 200_000
    with pytest.raises(grpc.RpcError) as caught:
        canary.ListDocuments(freki_pb2.ListDocumentsRequest(page_token=token), timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and len(caught.value.details()) < 200
    with pytest.raises(grpc.RpcError) as caught:
        canary.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="long-id", document_id="d" * 100_000, content="x"), timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT and len(caught.value.details()) < 300
    assert_tenant_unharmed(canary, freki_server[0].address)


@pytest.mark.parametrize("payload", [b"\x0a\xff\xff\xff\xff\xff", b"\x12\x05\xc3\x28\xa0\xa1\xff", b"\xff" * 64])
def test_malformed_protobuf_is_invalid_argument(canary, freki_server, payload: bytes) -> None:  # type: ignore[no-untyped-def]
    with grpc.insecure_channel(freki_server[0].address) as channel:
        call = channel.unary_unary("/wolf.v1.FrekiService/IndexDocument")
        with pytest.raises(grpc.RpcError) as caught:
            call(payload, timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
    assert "not a valid IndexDocumentRequest" in caught.value.details()
    assert_tenant_unharmed(canary, freki_server[0].address)


def test_a_deadline_stops_indexing_and_leaves_nothing(canary, freki_server) -> None:  # type: ignore[no-untyped-def]
    text = "\n\n".join(f"Paragraph {i} records tide gauge {uuid.uuid4().hex} at harbour {i}." for i in range(3000))
    with pytest.raises(grpc.RpcError) as caught:
        canary.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="slow", document_id="slow.txt", content=text), timeout=1.0)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    engine = freki_server[1]
    import time

    deadline = time.monotonic() + 10
    while engine.chunks.inner.count([]) != 1 and time.monotonic() < deadline:  # only the canary's chunk
        time.sleep(0.1)
    assert engine.chunks.inner.count([]) == 1, "no chunk of the stopped document remains"
    assert engine.registry.get("default", "slow.txt") is None
    assert_tenant_unharmed(canary, freki_server[0].address)


def test_delete_document_removes_chunks_the_registry_does_not_know(canary, freki_server) -> None:  # type: ignore[no-untyped-def]
    from freki.ingest.registry import chunk_point_id
    from freki.store import ChunkPoint, FieldMatch

    engine = freki_server[1]
    vector = engine.embedder.embed(["a ghost chunk no record owns"])[0].tolist()
    engine.chunks.upsert([ChunkPoint(chunk_point_id("default", "ghost", "g0", 0), vector, None, {
        "tenant_id": "default", "owner_id": "default", "document_id": "ghost", "generation": "g0",
        "chunk_index": 0, "content": "a ghost chunk no record owns", "metadata": {}})])
    assert engine.registry.get("default", "ghost") is None
    response = canary.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="g", document_id="ghost"), timeout=60)
    assert response.chunks_deleted == 1
    assert engine.chunks.inner.count([FieldMatch("document_id", ("ghost",))]) == 0
    with pytest.raises(grpc.RpcError) as caught:
        canary.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="g2", document_id="ghost"), timeout=60)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert_tenant_unharmed(canary, freki_server[0].address)
