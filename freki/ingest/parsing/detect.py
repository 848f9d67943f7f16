"""Content-type detection: declared type first, then file extension, then the bytes themselves."""

from __future__ import annotations

import io
import re
import zipfile

from freki.ingest.parsing.errors import UnsupportedFormat, describe_source
from wolf_service import filetypes

SUPPORTED = filetypes.SUPPORTED

_DECLARED: dict[str, str] = {
    "text": "text", "txt": "text", "plain": "text", "text/plain": "text",
    "markdown": "markdown", "md": "markdown", "text/markdown": "markdown", "text/x-markdown": "markdown",
    "html": "html", "htm": "html", "text/html": "html", "application/xhtml+xml": "html",
    "pdf": "pdf", "application/pdf": "pdf", "application/x-pdf": "pdf",
    "docx": "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    # Images (OCR)
    "image": "image", "image/png": "image", "image/jpeg": "image", "image/jpg": "image", "image/tiff": "image",
    "image/webp": "image", "image/bmp": "image", "image/x-ms-bmp": "image",
}
# Image signatures (OCR): PNG, JPEG, TIFF little/big endian, BMP (with its reserved header bytes zero).
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
_MARKDOWN_HINT = re.compile(r"^(?:#{1,6} \S|```|\s*[-*] \S.*\n\s*[-*] \S)", re.MULTILINE)


def detect_content_type(data: str | bytes, *, source: str = "", content_type: str = "") -> str:
    """Normalised short type ("text", "markdown", "html", "pdf", "docx", "image") of a document.

    Args:
        data: The content.
        source: Path or name, used for its extension.
        content_type: Declared MIME type or short name; wins when given.

    Raises:
        UnsupportedFormat: The declared type, extension or content is not a supported format.
    """
    name = describe_source(source)
    declared = content_type.split(";", 1)[0].strip().lower()
    if declared:
        if declared in _DECLARED:
            return _DECLARED[declared]
        raise UnsupportedFormat(
            f"content type {content_type!r} of {name} is not supported; use one of {', '.join(SUPPORTED)}",
            source=source,
        )
    by_name = filetypes.type_for_name(source)
    if by_name is not None:
        return by_name
    unsupported = filetypes.unsupported_reason(source)
    if unsupported is not None:
        raise UnsupportedFormat(
            f"{name} is a {unsupported} file, which is not supported; "
            f"convert it to one of {', '.join(SUPPORTED)}",
            source=source,
        )
    return sniff_content_type(data, source=source)


def sniff_content_type(data: str | bytes, *, source: str = "") -> str:
    """Guess the type from the content alone."""
    if isinstance(data, bytes):
        if b"%PDF-" in data[:1024]:
            return "pdf"
        if _is_image(data):
            return "image"
        if data.startswith(b"PK\x03\x04"):
            if _is_docx(data):
                return "docx"
            raise UnsupportedFormat(
                f"{describe_source(source)} is a zip archive but not a Word .docx file; not supported",
                source=source,
            )
        if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
            raise UnsupportedFormat(
                f"{describe_source(source)} is a legacy Office (OLE) file such as .doc or .xls, or an "
                "encrypted .docx; not supported — save it as .docx without a password",
                source=source,
            )
        head = data[:4096].decode("utf-8", errors="ignore")
    else:
        head = data[:4096]
    lowered = head.lstrip("\ufeff \t\r\n").lower()
    if lowered.startswith(("<!doctype html", "<html")) or "<html" in lowered[:1024]:
        return "html"
    if lowered.startswith("---\n") or _MARKDOWN_HINT.search(head):
        return "markdown"
    return "text"


def _is_image(data: bytes) -> bool:
    if data.startswith(_IMAGE_MAGIC):
        return True
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return True
    return data[:2] == b"BM" and len(data) >= 26 and data[6:10] == b"\x00\x00\x00\x00"


def _is_docx(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except zipfile.BadZipFile:
        # A truncated .docx still starts with the zip magic; let the DOCX parser report it as corrupt.
        return True
