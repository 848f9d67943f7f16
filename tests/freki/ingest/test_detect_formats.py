"""The new formats are recognised by their bytes, and hostile or locked files are refused with a clear error."""

from __future__ import annotations

import io
import zipfile

import pytest

from freki.ingest.parsing import (
    CorruptDocument,
    EncryptedDocument,
    LimitExceeded,
    ParseLimits,
    UnsupportedFormat,
    detect_content_type,
    parse_document,
)
from tests.freki.ingest.office_files_support import (
    build_eml,
    build_epub,
    build_msg,
    build_ods,
    build_odt,
    build_pptx,
    build_xlsx,
)

SAMPLES = {
    "pptx": lambda: build_pptx([{"title": "Sniffed deck", "body": ["slide text"]}]),
    "xlsx": lambda: build_xlsx({"Sniffed": [["a", "b"]]}),
    "ods": lambda: build_ods({"Sniffed": [["a", "b"]]}),
    "odt": lambda: build_odt([("p", "sniffed text")]),
    "epub": lambda: build_epub([("One", "<p>sniffed text</p>")]),
    "eml": lambda: build_eml("sniffed body"),
    "msg": lambda: build_msg("sniffed body"),
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
@pytest.mark.parametrize("name", ["upload", "upload.bin"])
def test_each_format_is_detected_by_content_without_an_extension(kind: str, name: str) -> None:
    data = SAMPLES[kind]()
    assert detect_content_type(data, source=name) == kind
    assert parse_document(data, source=name).content_type == kind


@pytest.mark.parametrize("kind", ["pptx", "xlsx", "ods", "odt", "epub", "msg"])
def test_a_package_or_compound_file_is_believed_over_a_wrong_extension(kind: str) -> None:
    data = SAMPLES[kind]()
    assert detect_content_type(data, source="renamed.docx") == kind
    assert detect_content_type(data, source="renamed.docx", content_type="docx") == kind, "odin index declares it"
    assert parse_document(data, source="renamed.docx", content_type="docx").content_type == kind


@pytest.mark.parametrize(("declared", "kind"), [
    ("application/vnd.openxmlformats-officedocument.presentationml.presentation", "pptx"),
    ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    ("application/vnd.oasis.opendocument.spreadsheet", "ods"), ("application/vnd.oasis.opendocument.text", "odt"),
    ("application/epub+zip", "epub"), ("message/rfc822", "eml"), ("application/vnd.ms-outlook", "msg"),
])
def test_declared_mime_types(declared: str, kind: str) -> None:
    assert detect_content_type(b"", source="x", content_type=declared) == kind


def test_an_email_sent_as_text_is_parsed() -> None:
    text = build_eml("Body sent as text.").decode()
    assert parse_document(text, source="pasted").metadata["subject"] == "Quarterly numbers"


def test_plain_text_that_merely_mentions_from_is_not_mail() -> None:
    assert detect_content_type(b"From: the author\nthis is a note\n", source="note") == "text"


def _encrypted(data: bytes) -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(data)).encrypt("s3cret", out)
    return out.getvalue()


@pytest.mark.parametrize("kind", ["pptx", "xlsx"])
@pytest.mark.parametrize("name", ["locked.{kind}", "upload"])
def test_password_protected_office_files_are_encrypted_documents(kind: str, name: str) -> None:
    data = _encrypted(SAMPLES[kind]())
    source = name.format(kind=kind)
    with pytest.raises(EncryptedDocument, match=f"'{source}' is a password-protected Office file"):
        parse_document(data, source=source)


def _legacy_ole() -> bytes:
    from aspose.email_foss.cfb import CFBWriter
    from aspose.email_foss.cfb.writer import CFBDocument, CFBStorage, CFBStream

    root = CFBStorage("Root Entry", children=[CFBStream("Workbook", b"\x09\x08" + b"\x00" * 4094)])
    return bytes(CFBWriter.to_bytes(CFBDocument(root=root)))


@pytest.mark.parametrize("name", ["old.xlsx", "upload"])
def test_legacy_ole_files_stay_refused(name: str) -> None:
    with pytest.raises(UnsupportedFormat, match="legacy Office"):
        parse_document(_legacy_ole(), source=name)


def test_a_damaged_ole_file_is_corrupt() -> None:
    with pytest.raises(CorruptDocument, match="damaged OLE"):
        parse_document(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, source="mail.msg")


def test_an_msg_that_is_not_ole_is_corrupt() -> None:
    with pytest.raises(CorruptDocument, match="not an Outlook .msg file"):
        parse_document(b"just text, not a message", source="mail.msg")


ENCRYPTED_MANIFEST = (
    b'<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
    b'<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>'
    b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">'
    b'<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="AAAA"/>'
    b"</manifest:file-entry></manifest:manifest>"
)


def test_password_protected_odf_is_encrypted() -> None:
    """A locked ODF keeps its zip; its manifest says which members are encrypted (they are not XML)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(build_odt([("p", "secret")]))) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = {"META-INF/manifest.xml": ENCRYPTED_MANIFEST, "content.xml": bytes(range(256)) * 4}
            target.writestr(item, body.get(item.filename, source.read(item)))
    with pytest.raises(EncryptedDocument, match="password-protected OpenDocument"):
        parse_document(out.getvalue(), source="locked.odt")


def test_a_zip_encrypted_package_is_encrypted() -> None:
    data = bytearray(SAMPLES["xlsx"]())
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0]
    data[info.header_offset + 6] |= 0x1  # the local header's "encrypted" flag
    central = data.find(b"PK\x01\x02")
    data[central + 8] |= 0x1  # and the central directory's, which zipfile reads
    with pytest.raises(EncryptedDocument, match="password-protected zip archive"):
        parse_document(bytes(data), source="zipcrypt.xlsx")


def test_drm_epub_is_encrypted() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(build_epub([("One", "<p>x</p>")]))) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            target.writestr(item, source.read(item))
        target.writestr("META-INF/encryption.xml", '<encryption><EncryptedData><CipherData><CipherReference '
                        'URI="EPUB/chap_1.xhtml"/></CipherData></EncryptedData></encryption>')
    with pytest.raises(EncryptedDocument, match="DRM-protected"):
        parse_document(out.getvalue(), source="locked.epub")


@pytest.mark.parametrize("kind", ["pptx", "xlsx", "ods", "odt", "epub"])
def test_zip_bombs_are_refused_before_the_library_opens_them(kind: str) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(SAMPLES[kind]()), "r") as source, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item.filename, source.read(item))
        target.writestr("padding.xml", b"\x00" * (8 * 1024 * 1024))
    with pytest.raises(LimitExceeded, match="limits.zip_max_ratio"):
        parse_document(out.getvalue(), source=f"bomb.{kind}", limits=ParseLimits())


def test_supported_types_are_listed_in_one_table() -> None:
    from wolf_service import filetypes

    for kind in ("pptx", "xlsx", "ods", "odt", "epub", "eml", "msg"):
        assert kind in filetypes.SUPPORTED
        assert filetypes.type_for_name(f"x.{kind}") == kind
        assert filetypes.unsupported_reason(f"x.{kind}") is None
    assert filetypes.unsupported_reason("x.xls") == "legacy Excel .xls"


@pytest.mark.parametrize("name", ["scan.pdf", "scan.docx", "notes.txt"])
def test_an_image_under_another_extension_is_read_as_the_image_it_is(name: str) -> None:
    from tests.freki.ingest.scanned_documents_support import encode, text_image

    png = encode([text_image(["Harbour master logbook"])], "PNG")
    assert detect_content_type(png, source=name) == "image"


def test_a_plain_zip_named_as_text_is_refused_as_a_zip_not_as_bad_utf8() -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.txt", "hello")
    with pytest.raises(UnsupportedFormat, match="is a zip archive but not a .docx"):
        detect_content_type(archive.getvalue(), source="notes.txt")
