"""Content-type detection: declared type first, then file extension, then the bytes themselves.

Zip packages are told apart by their members (``word/document.xml``, ``ppt/presentation.xml``,
``xl/workbook.xml``, an ODF or EPUB ``mimetype``), OLE compound files by their streams (an Outlook message
has ``__substg1.0_`` streams; an ``EncryptedPackage`` stream is a password-protected Office file), an
e-mail by its RFC 822 header block.
"""

from __future__ import annotations

import io
import re
import zipfile

from freki.ingest.parsing.errors import CorruptDocument, EncryptedDocument, UnsupportedFormat, describe_source
from wolf_service import filetypes

SUPPORTED = filetypes.SUPPORTED

_DECLARED: dict[str, str] = {
    "text": "text", "txt": "text", "plain": "text", "text/plain": "text",
    "markdown": "markdown", "md": "markdown", "text/markdown": "markdown", "text/x-markdown": "markdown",
    "html": "html", "htm": "html", "text/html": "html", "application/xhtml+xml": "html",
    "pdf": "pdf", "application/pdf": "pdf", "application/x-pdf": "pdf",
    "docx": "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "pptx": "pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "xlsx": "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "ods": "ods", "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "odt": "odt", "application/vnd.oasis.opendocument.text": "odt",
    "epub": "epub", "application/epub+zip": "epub",
    "eml": "eml", "message/rfc822": "eml",
    "msg": "msg", "application/vnd.ms-outlook": "msg", "application/x-msg": "msg",
    # Images (OCR)
    "image": "image", "image/png": "image", "image/jpeg": "image", "image/jpg": "image", "image/tiff": "image",
    "image/webp": "image", "image/bmp": "image", "image/x-ms-bmp": "image",
}
# Image signatures (OCR): PNG, JPEG, TIFF little/big endian.
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")
_MARKDOWN_HINT = re.compile(r"^(?:#{1,6} \S|```|\s*[-*] \S.*\n\s*[-*] \S)", re.MULTILINE)
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BINARY_MAGIC = (b"PK\x03\x04", OLE_MAGIC, b"%PDF-")
# Formats read as text: binary content under their name is never theirs.
_TEXT_KINDS = frozenset({"text", "markdown", "html"})
# Formats whose file is a zip package (checked by guards.check_zip before a library opens them).
ZIP_KINDS = frozenset({"docx", "pptx", "xlsx", "ods", "odt", "epub"})
# A zip member that names the package type, and the ODF/EPUB ``mimetype`` member's values.
_ZIP_MARKERS = (("word/document.xml", "docx"), ("ppt/presentation.xml", "pptx"), ("xl/workbook.xml", "xlsx"))
_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": "odt", "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/epub+zip": "epub",
}
# An RFC 822 header line ("Name: value") and the headers only an e-mail starts with.
_HEADER_LINE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*:[ \t]")
_MAIL_HEADERS = frozenset({"from", "to", "subject", "date", "message-id", "received", "return-path", "mime-version"})


def is_declared_type(content_type: str) -> bool:
    """Whether a declared MIME type (parameters ignored) or short name is one Freki parses."""
    return content_type.split(";", 1)[0].strip().lower() in _DECLARED


def detect_content_type(data: str | bytes, *, source: str = "", content_type: str = "") -> str:
    """Normalised short type (one of ``SUPPORTED``: "text", "markdown", "pdf", "xlsx", "eml"…) of a document.

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
            return _believe_content(_DECLARED[declared], data, source)
        raise UnsupportedFormat(
            f"content type {content_type!r} of {name} is not supported; use one of {', '.join(SUPPORTED)}",
            source=source,
        )
    by_name = filetypes.type_for_name(source)
    if by_name is not None:
        return _believe_content(by_name, data, source)
    unsupported = filetypes.unsupported_reason(source)
    if unsupported is not None:
        raise UnsupportedFormat(
            f"{name} is a {unsupported} file, which is not supported; "
            f"convert it to one of {', '.join(SUPPORTED)}",
            source=source,
        )
    return sniff_content_type(data, source=source)


def _believe_content(kind: str, data: str | bytes, source: str) -> str:
    """A zip package, OLE file, PDF or image of a known kind is that kind, whatever it is called or declared
    as (``odin index`` declares the extension's type); a damaged or unknown one is left to the parser of
    ``kind``, which says what is wrong with it — except a zip or OLE file called text, which no text parser
    can describe."""
    if not isinstance(data, bytes) or not (data.startswith(_BINARY_MAGIC) or _is_image(data)):
        return kind
    try:
        return sniff_content_type(data, source=source)
    except UnsupportedFormat:
        if kind in _TEXT_KINDS:
            raise
        return kind
    except CorruptDocument:
        return kind


def sniff_content_type(data: str | bytes, *, source: str = "") -> str:
    """Guess the type from the content alone."""
    if isinstance(data, bytes):
        if b"%PDF-" in data[:1024]:
            return "pdf"
        if _is_image(data):
            return "image"
        if data.startswith(b"PK\x03\x04"):
            return _zip_kind(data, source)
        if data.startswith(OLE_MAGIC):
            return refuse_ole(data, source=source)
        head = data[:8192].decode("utf-8", errors="ignore")
    else:
        head = data[:8192]
    lowered = head.lstrip("\ufeff \t\r\n").lower()
    if lowered.startswith(("<!doctype html", "<html")) or "<html" in lowered[:1024]:
        return "html"
    if _is_mail(head):
        return "eml"
    if lowered.startswith("---\n") or _MARKDOWN_HINT.search(head):
        return "markdown"
    return "text"


def refuse_ole(data: bytes, *, source: str = "", expected: str = "") -> str:
    """Classify an OLE compound file: "msg" for an Outlook message; anything else is refused.

    Raises:
        EncryptedDocument: A password-protected Office file (its OLE holds an ``EncryptedPackage`` stream).
        UnsupportedFormat: A legacy Office file (.doc, .xls, .ppt) or another OLE file.
        CorruptDocument: The compound file cannot be read.
    """
    import olefile

    name = describe_source(source)
    try:
        with olefile.OleFileIO(data) as ole:
            streams = ["/".join(entry) for entry in ole.listdir(streams=True, storages=False)]
    except (OSError, ValueError, IndexError, EOFError) as exc:
        raise CorruptDocument(f"{name} is a damaged OLE compound file ({exc})", source=source) from exc
    if "EncryptedPackage" in streams:
        raise EncryptedDocument(
            f"{name} is a password-protected Office file; remove the password and index the saved copy",
            source=source,
        )
    if any(stream.startswith("__substg1.0_") for stream in streams):
        return "msg"
    what = f"is not a {expected} file but " if expected else ""
    raise UnsupportedFormat(
        f"{name} {what}is a legacy Office (OLE) file such as .doc, .xls or .ppt; not supported — save it as "
        ".docx, .xlsx or .pptx", source=source,
    )


def _is_image(data: bytes) -> bool:
    if data.startswith(_IMAGE_MAGIC):
        return True
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return True
    return data[:2] == b"BM" and len(data) >= 26 and data[6:10] == b"\x00\x00\x00\x00"


def refuse_zip_encryption(data: bytes, *, source: str = "") -> None:
    """Refuse a zip package whose members are zip-encrypted (flag bit 0): no Office format uses that, and
    ``zipfile`` would stop at the first such member asking for a password.

    Raises:
        EncryptedDocument: A member is encrypted.
    """
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError):
        return  # the format's parser reports it as corrupt
    if any(member.flag_bits & 0x1 for member in members):
        raise EncryptedDocument(
            f"{describe_source(source)} is a password-protected zip archive; index an unencrypted copy",
            source=source,
        )


def _zip_kind(data: bytes, source: str) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            mimetype = archive.read("mimetype")[:100].decode("ascii", "ignore").strip() if "mimetype" in names else ""
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, KeyError, NotImplementedError):
        # A truncated package still names its first members near the start; let that format's parser say
        # it is corrupt.
        head = data[:65536]
        for marker, kind in _ZIP_MARKERS:
            if marker.encode() in head:
                return kind
        for value, kind in _MIMETYPES.items():
            if value.encode() in head[:200]:
                return kind
        raise CorruptDocument(f"{describe_source(source)} is a damaged zip archive", source=source) from None
    for marker, kind in _ZIP_MARKERS:
        if marker in names:
            return kind
    if mimetype in _MIMETYPES:
        return _MIMETYPES[mimetype]
    raise UnsupportedFormat(
        f"{describe_source(source)} is a zip archive but not a .docx, .pptx, .xlsx, .odt, .ods or .epub "
        "package; not supported", source=source,
    )


def _is_mail(head: str) -> bool:
    """Whether text starts with an RFC 822 header block naming a sender and at least one more mail header."""
    names: set[str] = set()
    for line in head.lstrip("\ufeff").splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and names:
            continue  # a folded header's continuation
        if not _HEADER_LINE.match(line):
            return False
        names.add(line.split(":", 1)[0].lower())
    return "from" in names and len(names & _MAIL_HEADERS) >= 2
