"""A real Freki indexes scanned documents: a scanned PDF and a photographed page come back from retrieval
with the page they are on and the OCR figures; an image bomb is refused naming its limit."""

from __future__ import annotations

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2

from tests.freki.ingest.scanned_documents_support import encode, png_header_only, text_image

pytestmark = pytest.mark.integration

OTTER = ["The otters of Lake Vesstrand hunt eels", "under the ice every February night."]
HERON = ["The grey heron nests in the reed bed", "beside the old mill on the river."]
GERMAN = ["Der Fährmann übersetzt die Gäste", "über den Fluss nach Weißenbühl."]


def retrieve(stub, prompt: str) -> list[common_pb2.RetrievedDocument]:  # type: ignore[no-untyped-def]
    return list(stub.RetrieveContext(common_pb2.WolfRequest(
        request_id="q", model_type=common_pb2.RAG, prompt=prompt,
        retrieval=common_pb2.RetrievalOptions(top_k=3)), timeout=60).rag_context.documents)


def test_a_scanned_pdf_is_indexed_and_a_passage_comes_back_with_its_page(freki_stub) -> None:  # type: ignore[no-untyped-def]
    pdf = encode([text_image(HERON), text_image(OTTER)], "PDF", resolution=300.0)
    freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id="scan", document_id="wildlife-scan.pdf", source="wildlife-scan.pdf", content_bytes=pdf),
        timeout=120)
    top = retrieve(freki_stub, "When do the otters of Lake Vesstrand hunt eels?")[0]
    assert top.document_id == "wildlife-scan.pdf"
    assert "otters of Lake Vesstrand hunt eels" in top.content
    assert top.metadata["page"] == "2"
    assert float(top.metadata["ocr_confidence"]) > 80


def test_a_photographed_page_is_indexed_with_its_umlauts(freki_stub) -> None:  # type: ignore[no-untyped-def]
    freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id="photo", document_id="faehre.jpg", source="faehre.jpg",
        content_bytes=encode([text_image(GERMAN)], "JPEG", quality=90)), timeout=120)
    top = retrieve(freki_stub, "Fährmann Weißenbühl")[0]
    assert top.document_id == "faehre.jpg"
    assert "Fährmann übersetzt die Gäste über den Fluss nach Weißenbühl" in top.content
    assert top.metadata["page"] == "1"


def test_an_image_bomb_is_refused_naming_the_limit(freki_stub) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as caught:
        freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="bomb", document_id="bomb.png", source="bomb.png",
            content_bytes=png_header_only(300_000, 300_000)), timeout=60)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "limits.ocr_max_pixels" in caught.value.details()


def test_a_watched_folder_indexes_scans_and_lists_a_bomb_with_its_limit(tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    from tests.freki.watch.conftest import settle, start_watched

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "heron.png").write_bytes(encode([text_image(HERON)], "PNG"))
    (folder / "otter.pdf").write_bytes(encode([text_image(OTTER)], "PDF", resolution=300.0))
    (folder / "bomb.png").write_bytes(png_header_only(300_000, 300_000))
    bundle, stop = start_watched(folder, tmp_path / "data", embedder)
    try:
        settle(bundle.watcher, timeout=180)
        assert bundle.doc_ids() == {"docs/heron.png", "docs/otter.pdf"}
        skipped = {s.path.rsplit("/", 1)[-1]: s.reason for s in bundle.status().watch_folders[0].skipped}
        assert "limits.ocr_max_pixels" in skipped["bomb.png"], skipped
        top = bundle.search("Where does the grey heron nest?")[0]
        assert top.document_id == "docs/heron.png" and top.metadata["page"] == "1"
    finally:
        stop()
