"""PDF and DOCX parsing; fixtures are generated here with pypdf and python-docx."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from freki.ingest.parsing import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    LimitExceeded,
    ParseLimits,
    parse_document,
)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def build_pdf(pages: list[list[str]], *, title: str = "", user_password: str | None = None) -> bytes:
    """A PDF whose pages show the given lines in Helvetica (a real text layer, one line per Tj)."""
    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        ops = "BT /F1 11 Tf 14 TL 72 740 Td " + " ".join(f"({_escape(x)}) Tj T*" for x in lines) + " ET"
        stream = DecodedStreamObject()
        stream.set_data(ops.encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    if title:
        writer.add_metadata({"/Title": title, "/Author": "Ann Author"})
    if user_password is not None:
        writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


PAGES = [
    [
        "Freki indexes documents into a vector store and retrieves the most",
        "relevant chunks for every prompt.",
        "",
        "Short paragraph.",
    ],
    ["The second page explains the retrieval pipeline."],
]


def test_pdf_pages_become_sections_with_page_numbers() -> None:
    doc = parse_document(build_pdf(PAGES, title="Freki Manual"), source="manual.pdf")
    assert doc.content_type == "pdf"
    assert [s.page for s in doc.sections] == [1, 2]
    assert doc.sections[0].text == (
        "Freki indexes documents into a vector store and retrieves the most relevant chunks for every "
        "prompt.\n\nShort paragraph."
    )
    assert doc.sections[1].text == "The second page explains the retrieval pipeline."
    assert doc.title == "Freki Manual"
    assert doc.metadata == {"pages": "2", "title": "Freki Manual", "author": "Ann Author"}


def test_pdf_detected_from_bytes_without_name() -> None:
    assert parse_document(build_pdf(PAGES)).content_type == "pdf"


def test_encrypted_pdf_is_a_clear_error() -> None:
    with pytest.raises(EncryptedDocument, match=r"PDF is encrypted: 'locked.pdf' needs a password"):
        parse_document(build_pdf(PAGES, user_password="s3cret"), source="locked.pdf")


def test_pdf_with_only_an_owner_password_is_readable() -> None:
    doc = parse_document(build_pdf(PAGES, user_password=""), source="restricted.pdf")
    assert "retrieval pipeline" in doc.text


@pytest.mark.parametrize(
    "data",
    [build_pdf(PAGES)[:400], b"%PDF-1.4\nthis is not a pdf body at all", b"%PDF-1.7\n" + bytes(range(256)) * 4],
    ids=["truncated", "garbage-body", "binary-noise"],
)
def test_corrupt_pdf_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(CorruptDocument, match=r"PDF is corrupt or truncated: 'broken.pdf' cannot be read"):
        parse_document(data, source="broken.pdf")


def test_pdf_of_blank_pages_is_reported_after_ocr_found_nothing() -> None:
    with pytest.raises(EmptyDocument, match=r"'scan.pdf' has no text layer and OCR found no text on its 2 page\(s\)"):
        parse_document(build_pdf([[], []]), source="scan.pdf")


def test_pdf_without_text_layer_is_reported_when_ocr_is_off() -> None:
    with pytest.raises(EmptyDocument, match=r"'scan.pdf' has no extractable text on its 2 page\(s\).*OCR"):
        parse_document(build_pdf([[], []]), source="scan.pdf", limits=ParseLimits(ocr_max_pages=0))


def build_docx() -> bytes:
    document = docx.Document()
    document.core_properties.title = "Operations Handbook"
    document.core_properties.author = "Ops Team"
    document.add_paragraph("Preface text before any heading.")
    document.add_heading("Deploy", level=1)
    document.add_paragraph("Deploy with the CLI.")
    document.add_paragraph("Build the image", style="List Bullet")
    document.add_paragraph("Push the image", style="List Bullet")
    document.add_heading("Rollback", level=2)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Step", "Command"
    table.cell(1, 0).text, table.cell(1, 1).text = "undo", "wolf rollback"
    document.add_paragraph("Then verify.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_headings_lists_and_tables() -> None:
    doc = parse_document(build_docx(), source="handbook.docx")
    assert doc.content_type == "docx"
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        ((), "Preface text before any heading."),
        (("Deploy",), "Deploy\n\nDeploy with the CLI.\n\n- Build the image\n- Push the image"),
        (("Deploy", "Rollback"),
         "Rollback\n\n| Step | Command |\n| --- | --- |\n| undo | wolf rollback |\n\nThen verify."),
    ]


def test_docx_core_properties_become_metadata() -> None:
    doc = parse_document(build_docx(), source="handbook.docx")
    assert doc.title == "Operations Handbook"
    assert doc.metadata["title"] == "Operations Handbook"
    assert doc.metadata["author"] == "Ops Team"


def test_docx_detected_by_sniffing() -> None:
    assert parse_document(build_docx(), source="upload").content_type == "docx"


def test_truncated_docx_is_a_clear_error() -> None:
    with pytest.raises(CorruptDocument, match=r"DOCX is corrupt or truncated: 'cut.docx'"):
        parse_document(build_docx()[:1500], source="cut.docx")


def test_zip_without_word_document_declared_as_docx_is_corrupt() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "hi")
    with pytest.raises(CorruptDocument, match="'fake.docx'"):
        parse_document(buffer.getvalue(), source="fake.docx")


def test_docx_with_broken_xml_is_a_clear_error() -> None:
    source = zipfile.ZipFile(io.BytesIO(build_docx()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for item in source.infolist():
            data = source.read(item)
            archive.writestr(item, data[: len(data) // 2] if item.filename == "word/document.xml" else data)
    with pytest.raises(CorruptDocument, match="DOCX is corrupt"):
        parse_document(buffer.getvalue(), source="xml.docx")


def test_password_protected_docx_is_reported_as_encrypted() -> None:
    from msoffcrypto.format.ooxml import OOXMLFile

    locked = io.BytesIO()
    OOXMLFile(io.BytesIO(build_docx())).encrypt("s3cret", locked)
    for source in ("locked.docx", "upload"):
        with pytest.raises(EncryptedDocument, match="is a password-protected Office file"):
            parse_document(locked.getvalue(), source=source)
    with pytest.raises(CorruptDocument, match="damaged OLE compound file"):
        parse_document(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512, source="locked.docx")


def test_docx_with_damaged_compressed_data_is_a_clear_error() -> None:
    data = bytearray(build_docx())
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("word/document.xml")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for offset in range(start + 10, start + min(info.compress_size, 200), 3):
        data[offset] ^= 0x5A  # scramble the deflate stream
    with pytest.raises(CorruptDocument, match="DOCX is corrupt or truncated: 'deflate.docx'"):
        parse_document(bytes(data), source="deflate.docx")


def test_a_pdf_with_more_pages_than_the_limit_is_refused_before_its_pages_are_read() -> None:
    from tests.freki.api.hostile_documents_support import many_page_pdf

    with pytest.raises(LimitExceeded, match=r"3 pages; the limit is 2 \(limits.pdf_max_pages\)") as caught:
        parse_document(build_pdf([["one"], ["two"], ["three"]]), source="long.pdf", limits=ParseLimits(pdf_max_pages=2))
    assert caught.value.setting == "limits.pdf_max_pages"
    with pytest.raises(LimitExceeded, match=r"100,000 pages; the limit is 5,000"):
        parse_document(many_page_pdf(100_000), source="blank.pdf")
