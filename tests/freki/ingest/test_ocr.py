"""OCR with the real Tesseract: scanned PDFs, scanned pages inside text PDFs, and images, through
``parse_document`` and the real parser sandbox; image bombs and the OCR limits, each refusal naming its setting."""

from __future__ import annotations

import io
import os

import psutil
import pytest
from pypdf import PdfReader, PdfWriter

from freki.ingest.parsing import (
    CorruptDocument,
    EmptyDocument,
    LimitExceeded,
    ParseLimits,
    UnsupportedFormat,
    detect_content_type,
    parse_document,
)
from freki.ingest.sandbox import ParserSandbox, SandboxConfig
from tests.freki.ingest.scanned_documents_support import blank_image, encode, png_header_only, text_image
from tests.freki.ingest.test_parsing_binary import build_pdf

HERON = ["The grey heron nests in the reed bed", "beside the old mill on the river."]
GERMAN = ["Müller prüfte die Größe der Brücke", "über die Straße in Köln."]
PIKE = ["A pike waits under the lily pads", "for minnows at dawn."]


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize(("fmt", "name"), [("PNG", "scan.png"), ("JPEG", "scan.jpg"), ("TIFF", "scan.tiff"),
                                           ("WEBP", "scan.webp"), ("BMP", "scan.bmp")])
def test_an_image_is_read_into_one_section_with_its_page(fmt: str, name: str) -> None:
    doc = parse_document(encode([text_image(HERON)], fmt), source=name)
    assert doc.content_type == "image" and doc.title == "scan"
    assert words(doc.text) == words(" ".join(HERON))
    assert [s.page for s in doc.sections] == [1]
    assert doc.metadata["ocr_pages"] == ["1"] and float(str(doc.metadata["ocr_confidence"])) > 80
    assert "ocr_low_confidence_pages" not in doc.metadata


def test_german_umlauts_and_sharp_s_come_back() -> None:
    doc = parse_document(encode([text_image(GERMAN)], "PNG"), source="brief.png")
    assert words(doc.text) == words(" ".join(GERMAN))


def test_a_multi_page_tiff_is_one_section_per_page() -> None:
    doc = parse_document(encode([text_image(HERON), text_image(PIKE)], "TIFF"), source="fax.tif")
    assert [(s.page, words(s.text)) for s in doc.sections] == [(1, words(" ".join(HERON))),
                                                               (2, words(" ".join(PIKE)))]
    assert doc.metadata["pages"] == "2" and doc.metadata["ocr_pages"] == ["1", "2"]


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF", "WEBP", "BMP"])
def test_images_are_recognised_by_their_bytes(fmt: str) -> None:
    data = encode([blank_image(40, 40)], fmt)
    assert detect_content_type(data, source="upload") == "image"
    assert detect_content_type(data, source="upload", content_type=f"image/{fmt.lower()}") == "image"


def test_a_scanned_pdf_is_read_page_by_page() -> None:
    pdf = encode([text_image(HERON), text_image(PIKE)], "PDF", resolution=300.0)
    assert not "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages).strip(), "no text layer"
    doc = parse_document(pdf, source="scan.pdf")
    assert doc.content_type == "pdf"
    assert [(s.page, words(s.text)) for s in doc.sections] == [(1, words(" ".join(HERON))),
                                                               (2, words(" ".join(PIKE)))]
    assert doc.metadata["pages"] == "2" and doc.metadata["ocr_pages"] == ["1", "2"]


def test_a_scanned_page_inside_a_text_pdf_is_read_and_the_text_pages_are_kept() -> None:
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(build_pdf([["Chapter one is typed text about otters."]]))))
    writer.append(PdfReader(io.BytesIO(encode([text_image(HERON)], "PDF", resolution=300.0))))
    writer.append(PdfReader(io.BytesIO(build_pdf([["Chapter three is typed text about beavers."]]))))
    out = io.BytesIO()
    writer.write(out)
    doc = parse_document(out.getvalue(), source="report.pdf")
    assert [s.page for s in doc.sections] == [1, 2, 3]
    assert doc.sections[0].text == "Chapter one is typed text about otters."
    assert words(doc.sections[1].text) == words(" ".join(HERON))
    assert doc.sections[2].text == "Chapter three is typed text about beavers."
    assert doc.metadata["ocr_pages"] == ["2"]


def test_a_text_pdf_is_not_ocrd() -> None:
    doc = parse_document(build_pdf([["Only typed text lives on this page, nothing scanned."]]), source="t.pdf")
    assert "ocr_pages" not in doc.metadata


def test_a_blank_page_gives_no_text_and_no_error_beside_a_page_with_text() -> None:
    doc = parse_document(encode([text_image(HERON), blank_image()], "PDF", resolution=300.0), source="two.pdf")
    assert [s.page for s in doc.sections] == [1]
    assert doc.metadata["ocr_pages"] == ["1", "2"]


def test_a_blank_image_is_an_empty_document() -> None:
    with pytest.raises(EmptyDocument, match=r"OCR found no text in image 'white.png' \(1 page\(s\)\)"):
        parse_document(encode([blank_image()], "PNG"), source="white.png")


def test_a_low_confidence_page_is_indexed_and_flagged() -> None:
    doc = parse_document(encode([text_image(HERON), text_image(PIKE, blur=5)], "TIFF"), source="faded.tif")
    assert [s.page for s in doc.sections] == [1, 2], "the faded page is still indexed"
    assert doc.metadata["ocr_low_confidence_pages"] == ["2"]
    assert float(str(doc.metadata["ocr_confidence"])) < 90


def test_an_image_bomb_is_refused_by_its_header_naming_the_limit() -> None:
    bomb = png_header_only(200_000, 200_000)  # 40 gigapixels declared in 100 bytes
    with pytest.raises(LimitExceeded, match=r"declares 40,000,000,000 pixels; the limit is 40,000,000 "
                       r"\(limits.ocr_max_pixels\)") as caught:
        parse_document(bomb, source="bomb.png")
    assert caught.value.setting == "limits.ocr_max_pixels"
    assert "80000000" not in str(caught.value), "one limit named: ours, not Pillow's internal bar"


def test_an_image_over_the_pixel_limit_is_refused_naming_the_setting() -> None:
    data = encode([text_image(HERON)], "PNG")
    with pytest.raises(LimitExceeded, match=r"1,600 x 200 = 320,000 pixels; the limit is 200,000 \(limits.ocr_max"):
        parse_document(data, source="big.png", limits=ParseLimits(ocr_max_pixels=200_000))


def test_a_frame_over_the_pixel_limit_inside_a_tiff_is_refused() -> None:
    data = encode([blank_image(100, 100), text_image(HERON)], "TIFF")
    with pytest.raises(LimitExceeded, match=r"page 2 of 2 is 1,600 x 200 .*limits.ocr_max_pixels"):
        parse_document(data, source="mixed.tiff", limits=ParseLimits(ocr_max_pixels=100_000))


def test_too_many_pages_to_recognise_are_refused_naming_the_setting() -> None:
    pages = [text_image(["page"], size=30, width=300)] * 3
    for data, name in ((encode(pages, "TIFF"), "fax.tiff"), (encode(pages, "PDF", resolution=300.0), "scan.pdf")):
        with pytest.raises(LimitExceeded, match=r"3 page\(s\) .*the limit is 2 \(limits.ocr_max_pages"):
            parse_document(data, source=name, limits=ParseLimits(ocr_max_pages=2))


def test_a_page_over_its_time_is_stopped_naming_the_setting() -> None:
    with pytest.raises(LimitExceeded, match=r"took longer than 0.01 s; it was stopped \(limits.ocr_seconds_per_page\)"):
        parse_document(encode([text_image(HERON)], "PNG"), source="slow.png",
                       limits=ParseLimits(ocr_seconds_per_page=0.01))


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, encode([text_image(HERON)], "JPEG")[:600]],
                         ids=["garbage-png", "truncated-jpeg"])
def test_a_corrupt_image_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(CorruptDocument, match=r"image 'broken'.* cannot be (read|decoded)"):
        parse_document(data, source="broken", content_type="image/png")


def test_ocr_runs_in_the_real_sandbox_and_each_page_earns_its_own_time() -> None:
    # parse_timeout_s alone is far too short for two OCR'd pages; ocr_seconds_per_page per page is not.
    config = SandboxConfig(timeout_s=0.2, workers=1, parse=ParseLimits(ocr_seconds_per_page=60))
    sandbox = ParserSandbox(config)
    try:
        pdf = encode([text_image(HERON), text_image(GERMAN)], "PDF", resolution=300.0)
        doc = sandbox.parse(pdf, source="scan.pdf")
        assert [(s.page, words(s.text)) for s in doc.sections] == [(1, words(" ".join(HERON))),
                                                                   (2, words(" ".join(GERMAN)))]
        assert doc.metadata["ocr_pages"] == ["1", "2"]
        with pytest.raises(LimitExceeded) as caught:
            sandbox.parse(png_header_only(100_000, 100_000), source="bomb.png")
        assert caught.value.setting == "limits.ocr_max_pixels"
        workers = [child for child in psutil.Process().children()
                   if "freki.ingest.parsing.worker" in child.cmdline()]
        assert workers and all(w.environ().get("OMP_THREAD_LIMIT") == "1" for w in workers)
    finally:
        sandbox.close()


def test_ocr_in_this_process_leaves_its_environment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # A limit set here would be inherited by every process started afterwards and cap torch's threads.
    monkeypatch.delenv("OMP_THREAD_LIMIT", raising=False)
    parse_document(encode([text_image(HERON)], "PNG"), source="scan.png")
    assert "OMP_THREAD_LIMIT" not in os.environ


def test_a_language_pack_that_is_not_installed_is_named() -> None:
    with pytest.raises(UnsupportedFormat, match=r"OCR failed .*\(languages 'klingon', limits.ocr_languages\)"):
        parse_document(encode([text_image(HERON)], "PNG"), source="scan.png",
                       limits=ParseLimits(ocr_languages="klingon"))


def test_a_server_without_tesseract_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytesseract

    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "/nonexistent/tesseract")
    with pytest.raises(UnsupportedFormat, match=r"tesseract program is not installed .*apt-get install tesseract-ocr"):
        parse_document(encode([text_image(HERON)], "PNG"), source="scan.png")


def test_an_e_mail_and_its_attachments_share_one_ocr_page_budget_in_the_sandbox() -> None:
    from tests.freki.ingest.office_files_support import build_eml

    png = encode([text_image(HERON)], "PNG")
    mail = build_eml("Two scans attached.", attachments=[("first.png", png, "image/png"),
                                                          ("second.png", png, "image/png")])
    sandbox = ParserSandbox(SandboxConfig(workers=1, parse=ParseLimits(ocr_max_pages=1)))
    try:
        doc = sandbox.parse(mail, source="scans.eml")
    finally:
        sandbox.close()
    assert doc.metadata["attachments"] == ["first.png"]
    assert doc.metadata["attachments_skipped"] == ["second.png: over limits.ocr_max_pages"]
    assert set(words(" ".join(HERON))) <= set(words(doc.text))
