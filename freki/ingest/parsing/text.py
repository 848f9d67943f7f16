"""Plain text: decoding bytes safely and turning lines into clean paragraphs."""

from __future__ import annotations

import codecs
import re
from typing import Any

from freki.ingest.parsing.document import ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, describe_source

# Lines that start a list item keep their own line; every other wrapped line joins its paragraph.
LIST_ITEM = re.compile(r"^\s*(?:[-*+•‣◦▪]|\d{1,3}[.)]|[A-Za-z][)])\s+\S")
# Control characters other than tab/newline/CR/form feed mean the "text" is really binary.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_text(data: str | bytes, *, source: str = "", fallback_encoding: str = "") -> str:
    """Decode document bytes to text with Unix newlines.

    UTF-8 (with or without BOM) is the default; UTF-16/32 are accepted when a BOM says so,
    `fallback_encoding` (e.g. an HTML `<meta charset>`) is tried when UTF-8 fails, and then the encoding
    charset-normalizer detects among the common legacy ones (``detect_legacy_encoding``).

    Raises:
        CorruptDocument: The bytes are not text (NUL/control bytes) or not valid in any accepted encoding.
    """
    name = describe_source(source)
    if isinstance(data, bytes):
        text = _decode_bytes(data, source, fallback_encoding)
    else:
        text = data.removeprefix("\ufeff")
    bad = _CONTROL.search(text)
    if bad:
        raise CorruptDocument(
            f"document {name} looks binary, not text: control character {bad.group()!r} at offset "
            f"{bad.start()}; send binary formats (pdf, docx, xlsx, …) with their content type",
            source=source,
        )
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")


def _decode_bytes(data: bytes, source: str, fallback_encoding: str) -> str:
    name = describe_source(source)
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise CorruptDocument(
                    f"document {name} has a {encoding} byte-order mark but invalid {encoding} data at "
                    f"byte {exc.start + len(bom)}",
                    source=source,
                ) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        for encoding in (fallback_encoding, detect_legacy_encoding(data)):
            if encoding:
                try:
                    return data.decode(encoding)
                except (UnicodeDecodeError, LookupError):
                    pass
        raise CorruptDocument(
            f"document {name} is not valid UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}) and no other text encoding fits it; re-save it as UTF-8",
            source=source,
        ) from exc


# Legacy encodings files still arrive in, most common first: ties between equally plausible readings go to
# the earlier one (a short French text reads the same in cp1252 and cp1250; cp1252 is the likelier source).
LEGACY_ENCODINGS = (
    "cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1257", "koi8_r", "shift_jis", "euc_jp", "gb18030",
    "big5", "euc_kr", "iso8859_15", "latin_1",
)


def detect_legacy_encoding(data: bytes) -> str:
    """The legacy encoding charset-normalizer finds most plausible for ``data``, or "" when none fits.

    Only the encodings in ``LEGACY_ENCODINGS`` are considered: on short texts the detector otherwise
    prefers exotic code pages (cp1006 for "café"). Among readings with the same noise and coherence,
    the earliest of that list wins.
    """
    from charset_normalizer import from_bytes  # only needed for non-UTF-8 files; keeps imports light

    matches = list(from_bytes(data, cp_isolation=list(LEGACY_ENCODINGS)))

    def candidates(match: object) -> list[str]:
        found = {getattr(match, "encoding", ""), *getattr(match, "could_be_from_charset", [])}
        return sorted((e for e in found if e in LEGACY_ENCODINGS), key=LEGACY_ENCODINGS.index)

    ranked = [(round(m.chaos, 2), -round(m.coherence, 2), candidates(m)) for m in matches]
    ranked = [r for r in ranked if r[2]]
    if not ranked:
        return ""
    return min(ranked, key=lambda r: (r[0], r[1], LEGACY_ENCODINGS.index(r[2][0])))[2][0]


def clean_inline(text: str) -> str:
    """Collapse runs of spaces and tabs inside a line."""
    return re.sub(r"[ \t\u00a0]+", " ", text).strip()


def lines_to_paragraphs(
    lines: list[str], *, keep_breaks: bool = False, hard: frozenset[int] = frozenset()
) -> list[str]:
    """Group lines into paragraphs at blank lines, unwrapping hard-wrapped prose.

    Args:
        lines: Raw lines.
        keep_breaks: Keep every line break (for code and preformatted text).
        hard: Indices of lines that must start a new line (e.g. table rows).

    Returns:
        Paragraphs; inside one, a newline is kept only before list items and indented lines.
    """
    paragraphs: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            paragraphs.append("\n".join(current))
            current.clear()

    for number, raw in enumerate(lines):
        if not raw.strip():
            flush()
            continue
        if keep_breaks:
            current.append(raw.rstrip())
            continue
        line = clean_inline(raw)
        hard_break = number in hard or LIST_ITEM.match(raw) is not None or raw.startswith(("    ", "\t"))
        if current and not hard_break:
            previous = current[-1]
            # A line-end hyphen before a lowercase letter is a word split by wrapping.
            if previous.endswith("-") and line[:1].islower() and previous[-2:-1].isalpha():
                current[-1] = previous[:-1] + line
            else:
                current[-1] = f"{previous} {line}"
        else:
            current.append(line)
    flush()
    return paragraphs


def parse_text(data: str | bytes, *, source: str = "") -> ParsedDocument:
    """Parse plain text: one section, prose paragraphs unwrapped."""
    text = decode_text(data, source=source)
    paragraphs = lines_to_paragraphs(text.split("\n"))
    sections = [Section(text="\n\n".join(paragraphs))] if paragraphs else []
    return build_document(sections, title="", content_type="text", metadata={})


def office_properties(props: Any) -> dict[str, str]:
    """Metadata from an Office package's core properties (python-docx and python-pptx share their shape)."""
    metadata: dict[str, str] = {}
    for key in ("title", "author", "subject", "keywords", "category", "language"):
        value = getattr(props, key, "")
        if isinstance(value, str) and value.strip():
            metadata[key] = clean_inline(value)
    for key in ("created", "modified"):
        stamp = getattr(props, key, None)
        if stamp is not None:
            metadata[key] = stamp.isoformat()
    return metadata
