"""Document parsing: bytes or text in, plain text with sections and metadata out.

Pipeline position: parse → chunk → embed → store → retrieve. `parse_document` is the entry point.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from freki.ingest.parsing.detect import SUPPORTED, detect_content_type
from freki.ingest.parsing.document import ParsedDocument, Section
from freki.ingest.parsing.docx import parse_docx
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
from freki.ingest.parsing.markdown import parse_markdown
from freki.ingest.parsing.pdf import parse_pdf
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
    limits: ParseLimits | None = None,
) -> ParsedDocument:
    """Parse a document of any supported type.

    Args:
        data: Text (text, markdown, html) or raw bytes (any type; required for pdf and docx).
        source: Path or name of the document; used for type detection and in error messages.
        content_type: MIME type or short name; empty means detect.
        max_bytes: Reject documents larger than this many bytes (None = no limit).
        limits: Limits on what parsing may produce and on hostile structure (``ParseLimits()`` if None).
            Run untrusted input through ``freki.ingest.sandbox`` too, which bounds memory and time.

    Returns:
        The parsed document. Its title falls back to the source's file name stem.

    Raises:
        DocumentError: Unsupported, corrupt, encrypted, empty, too large, or over a limit (``LimitExceeded``,
            ``RefusedStructure``); the message says which, and which setting.
    """
    limits = limits or ParseLimits()
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", errors="surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise DocumentTooLarge(size, max_bytes, source=source)
    kind = detect_content_type(data, source=source, content_type=content_type)
    if kind in ("pdf", "docx"):
        if not isinstance(data, bytes):
            raise UnsupportedFormat(
                f"{kind.upper()} document {describe_source(source)} was sent as text; send the raw file "
                "bytes (content_bytes) instead",
                source=source,
            )
        if kind == "docx":
            check_zip(data, limits, source=source)
        document = (parse_pdf(data, source=source, limits=limits) if kind == "pdf"
                    else parse_docx(data, source=source, limits=limits))
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
