"""Document parsing: bytes or text in, plain text with sections and metadata out.

Pipeline position: parse → chunk → embed → store → retrieve. `parse_document` is the entry point.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from freki.ingest.parsing.detect import (
    OLE_MAGIC,
    SUPPORTED,
    ZIP_KINDS,
    detect_content_type,
    is_declared_type,
    refuse_ole,
)
from freki.ingest.parsing.document import ParsedDocument, Section
from freki.ingest.parsing.docx import parse_docx
from freki.ingest.parsing.epub import parse_epub
from freki.ingest.parsing.errors import (
    CorruptDocument,
    DocumentError,
    DocumentTooLarge,
    EmptyDocument,
    EncryptedDocument,
    LimitExceeded,
    RefusedStructure,
    UnsupportedFormat,
    describe_source,
)
from freki.ingest.parsing.guards import ParseLimits, check_plain_bytes, check_text_chars, check_zip
from freki.ingest.parsing.html import parse_html
from freki.ingest.parsing.images import parse_image
from freki.ingest.parsing.mail import PartParser, parse_eml
from freki.ingest.parsing.markdown import parse_markdown
from freki.ingest.parsing.ocr import OcrProgress
from freki.ingest.parsing.odt import parse_odt
from freki.ingest.parsing.outlook import parse_msg
from freki.ingest.parsing.pptx import parse_pptx
from freki.ingest.parsing.scans import parse_pdf_with_ocr
from freki.ingest.parsing.spreadsheet import parse_ods, parse_xlsx
from freki.ingest.parsing.text import parse_text

__all__ = [
    "SUPPORTED",
    "CorruptDocument",
    "DocumentError",
    "DocumentTooLarge",
    "EmptyDocument",
    "EncryptedDocument",
    "LimitExceeded",
    "ParseLimits",
    "ParsedDocument",
    "RefusedStructure",
    "Section",
    "UnsupportedFormat",
    "detect_content_type",
    "parse_document",
]


def parse_document(
    data: str | bytes, *, source: str = "", content_type: str = "", max_bytes: int | None = None,
    limits: ParseLimits | None = None, on_ocr_page: OcrProgress | None = None,
) -> ParsedDocument:
    """Parse a document of any supported type.

    Args:
        data: Text (text, markdown, html, eml) or raw bytes (any type; required for the office, e-book,
            pdf and msg formats).
        source: Path or name of the document; used for type detection and in error messages.
        content_type: MIME type or short name; empty means detect.
        max_bytes: Reject documents larger than this many bytes (None = no limit).
        limits: Limits on what parsing may produce and on hostile structure (``ParseLimits()`` if None).
            Run untrusted input through ``freki.ingest.sandbox`` too, which bounds memory and time.
        on_ocr_page: Called with each page number before it is OCR'd (scanned PDF pages, images).

    Returns:
        The parsed document. Its title falls back to the source's file name stem.

    Raises:
        DocumentError: Unsupported, corrupt, encrypted, empty, too large, or over a limit (``LimitExceeded``,
            ``RefusedStructure``); the message says which, and which setting.
    """
    return _parse(data, source=source, content_type=content_type, max_bytes=max_bytes,
                  limits=limits or ParseLimits(), depth=0, on_ocr_page=on_ocr_page)


# Formats read from their raw bytes only (a zip package, an OLE file, a PDF).
_BINARY = ZIP_KINDS | {"pdf", "msg", "image"}


def _parse(
    data: str | bytes, *, source: str, content_type: str, max_bytes: int | None, limits: ParseLimits, depth: int,
    on_ocr_page: OcrProgress | None = None,
) -> ParsedDocument:
    """``parse_document`` at a nesting depth (an e-mail's attachments are parsed one level deeper)."""
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", errors="surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise DocumentTooLarge(size, max_bytes, source=source)
    kind = detect_content_type(data, source=source, content_type=content_type)
    if kind in _BINARY:
        if not isinstance(data, bytes):
            raise UnsupportedFormat(
                f"{kind.upper()} document {describe_source(source)} was sent as text; send the raw file "
                "bytes (content_bytes) instead",
                source=source,
            )
        document = _parse_binary(kind, data, source, limits, depth, on_ocr_page)
    elif kind == "eml":
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        document = parse_eml(raw, source=source, limits=limits, parse_part=_part_parser(limits, on_ocr_page),
                             depth=depth)
    elif kind == "markdown":
        document = parse_markdown(data, source=source, limits=limits)
    elif kind == "html":
        document = parse_html(data, source=source, limits=limits)
    else:
        check_plain_bytes(size, limits, source=source)
        document = parse_text(data, source=source)
    check_text_chars(document.text, limits, source=source)
    if not document.title and source:
        return replace(document, title=PurePath(source).stem)
    return document


def _parse_binary(
    kind: str, data: bytes, source: str, limits: ParseLimits, depth: int, on_ocr_page: OcrProgress | None,
) -> ParsedDocument:
    if kind in ZIP_KINDS:
        if data.startswith(OLE_MAGIC):  # a password-protected Office file is an OLE file, whatever its name
            refuse_ole(data, source=source, expected=kind)
        check_zip(data, limits, source=source)
    if kind == "pdf":
        return parse_pdf_with_ocr(data, source=source, limits=limits, on_progress=on_ocr_page)
    if kind == "image":
        return parse_image(data, source=source, limits=limits, on_progress=on_ocr_page)
    if kind == "docx":
        return parse_docx(data, source=source)
    if kind == "pptx":
        return parse_pptx(data, source=source, limits=limits)
    if kind == "xlsx":
        return parse_xlsx(data, source=source, limits=limits)
    if kind == "ods":
        return parse_ods(data, source=source, limits=limits)
    if kind == "odt":
        return parse_odt(data, source=source)
    if kind == "epub":
        return parse_epub(data, source=source, limits=limits)
    if not data.startswith(OLE_MAGIC):
        raise CorruptDocument(f"{describe_source(source)} is not an Outlook .msg file (no OLE header)", source=source)
    refuse_ole(data, source=source, expected="msg")
    return parse_msg(data, source=source, limits=limits, parse_part=_part_parser(limits, on_ocr_page), depth=depth)


def _part_parser(limits: ParseLimits, on_ocr_page: OcrProgress | None) -> PartParser:
    """How an e-mail parses its attachments: by declared type when it is one Freki knows, else by name and bytes."""
    def parse_part(data: bytes, name: str, content_type: str, depth: int) -> ParsedDocument:
        declared = content_type if is_declared_type(content_type) else ""
        return _parse(data, source=name, content_type=declared, max_bytes=None, limits=limits, depth=depth,
                      on_ocr_page=on_ocr_page)
    return parse_part
