"""PDF: the text layer of each page (via pypdf) as one section per page; tables as Markdown tables.

pypdf reads every page's text and, in the same pass, notes what hints at a table: lines and rectangles
drawn, or text runs starting at the same x positions on consecutive lines. Only such pages (at most
``limits.pdf_table_pages`` of them) go through pdfplumber (``freki.ingest.parsing.pdf_tables``), whose
layout analysis is several times slower; a page with a confirmed table takes its text from there, the
table's words only once, in the table.
"""

from __future__ import annotations

import io
import logging
import re

from pypdf import PageObject, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from freki.ingest.parsing.document import ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import (
    CorruptDocument,
    EmptyDocument,
    EncryptedDocument,
    LimitExceeded,
    describe_source,
)
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.pdf_tables import PageBlock, read_pages
from freki.ingest.parsing.tables import check_table_size, table_text
from freki.ingest.parsing.text import LIST_ITEM, clean_inline

_SENTENCE_END = re.compile(r"[.!?:;)\"”]$")


def parse_pdf(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse a PDF; sections are pages (1-based `page`), metadata from the document info.

    Raises:
        LimitExceeded: A table has more rows or columns than ``limits.table_max_rows`` / ``table_max_columns``.
        LimitExceeded: More pages than ``limits.pdf_max_pages``.
        EncryptedDocument: The PDF needs a password.
        CorruptDocument: pypdf cannot read it.
        EmptyDocument: No page has a text layer (a scan needs OCR first).
    """
    name = describe_source(source)
    # pypdf logs every recoverable defect as a warning; parsing continues, so keep the logs quiet.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    limits = limits or ParseLimits()
    _check_page_count(data, limits, source)
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not _try_empty_password(reader):
            raise EncryptedDocument(
                f"PDF is encrypted: {name} needs a password; remove the protection before indexing",
                source=source,
            )
        hints = [_TableHints() for _ in reader.pages]
        pages = [_page_text(page, hint) for page, hint in zip(reader.pages, hints, strict=True)]
        info = reader.metadata
    except EncryptedDocument:
        raise
    except FileNotDecryptedError as exc:
        raise EncryptedDocument(f"PDF is encrypted: {name} ({exc})", source=source) from exc
    # pypdf raises many exception types on malformed input (PdfReadError, ValueError, KeyError,
    # TypeError, AssertionError...); any of them means the file cannot be read.
    except Exception as exc:
        detail = str(exc) or type(exc).__name__
        raise CorruptDocument(
            f"PDF is corrupt or truncated: {name} cannot be read ({detail})", source=source
        ) from exc
    texts = ["\n\n".join(_page_paragraphs(text)) for text in pages]
    candidates = [number for number, hint in enumerate(hints) if hint.ruled or hint.columnar()]
    candidates = candidates[: limits.pdf_table_pages]
    columnar = {number for number in candidates if hints[number].columnar()}
    for number, blocks in _table_pages(data, candidates, columnar, name, source):
        texts[number] = _blocks_text(blocks, limits, source)
    sections = [Section(text=text, page=number) for number, text in enumerate(texts, start=1)]
    if not any(s.text.strip() for s in sections):
        raise EmptyDocument(
            f"PDF {name} has no extractable text on its {len(pages)} page(s); it is probably scanned "
            "images — run OCR on it first",
            source=source,
        )
    metadata: dict[str, str] = {"pages": str(len(pages))}
    skipped = sum(1 for hint in hints if hint.ruled or hint.columnar()) - len(candidates)
    if skipped:
        metadata["table_pages_not_read"] = f"{skipped} (limits.pdf_table_pages)"
    if info is not None:
        for key, field in (("title", "/Title"), ("author", "/Author"), ("subject", "/Subject"),
                           ("keywords", "/Keywords"), ("creator", "/Creator")):
            value = info.get(field)
            if isinstance(value, str) and value.strip():
                metadata[key] = clean_inline(value)
    return build_document(sections, title=metadata.get("title", ""), content_type="pdf", metadata=metadata)


def _check_page_count(data: bytes, limits: ParseLimits, source: str) -> None:
    """Refuse a PDF of more than ``pdf_max_pages`` pages before pypdf, which walks every page, opens it.

    pdfium reads the page count from the page tree in milliseconds; a file pdfium cannot open (or one that
    needs a password) is left to pypdf, whose errors say what is wrong with it.
    """
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError:
        return
    try:
        pages = len(document)
    finally:
        document.close()
    if pages > limits.pdf_max_pages:
        raise LimitExceeded(
            f"PDF {describe_source(source)} has {pages:,} pages; the limit is {limits.pdf_max_pages:,} "
            "(limits.pdf_max_pages)", setting="limits.pdf_max_pages", source=source,
        )


class _TableHints:
    """What pypdf's pass over one page saw that hints at a table."""

    # Drawn segments and rectangles that make a ruled table (a rule under a heading is one); past the
    # maximum the page is a drawing or chart, and table finding would spend its time pairing edges.
    RULINGS = 4
    MAX_RULINGS = 5_000
    # Consecutive lines whose text runs start at two or more shared x positions.
    ALIGNED_LINES = 3

    def __init__(self) -> None:
        self.rulings = 0
        self.starts: dict[int, set[int]] = {}  # line (y, points) -> x of the text runs starting on it

    @property
    def ruled(self) -> bool:
        return self.RULINGS <= self.rulings <= self.MAX_RULINGS

    def columnar(self) -> bool:
        lines = [self.starts[y] for y in sorted(self.starts, reverse=True)]
        streak = 0
        for above, line in zip([set[int](), *lines], lines, strict=False):
            streak = streak + 1 if len(line) >= 2 and len(line & above) >= 2 else int(len(line) >= 2)
            if streak >= self.ALIGNED_LINES:
                return True
        return False


def _page_text(page: PageObject, hints: _TableHints) -> str:
    def operator(op: bytes, args: object, cm: object, tm: object) -> None:
        if op in (b"re", b"l"):
            hints.rulings += 1

    def text_run(text: str, cm: list[float], tm: list[float], font: object, size: object) -> None:
        if text.strip():
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
            hints.starts.setdefault(round(y), set()).add(round(x / 2))

    return page.extract_text(visitor_operand_before=operator, visitor_text=text_run) or ""


def _table_pages(
    data: bytes, candidates: list[int], columnar: set[int], name: str, source: str
) -> list[tuple[int, list[PageBlock]]]:
    try:
        return list(read_pages(data, candidates, columnar))
    # pdfminer, like pypdf, raises many exception types on malformed input; the text layer stands.
    except Exception as exc:
        logging.getLogger(__name__).warning("PDF %s: tables not read (%s: %s)", name, type(exc).__name__, exc)
        return []


def _blocks_text(blocks: list[PageBlock], limits: ParseLimits, source: str) -> str:
    paragraphs: list[str] = []
    for block in blocks:
        if block.rows:
            check_table_size(block.rows, limits, source=source)
            paragraphs.append(table_text(block.rows))
        else:
            paragraphs.extend(_page_paragraphs(block.text))
    return "\n\n".join(p for p in paragraphs if p)


def _try_empty_password(reader: PdfReader) -> bool:
    # Many PDFs are "encrypted" only to restrict printing/copying, with an empty user password.
    try:
        return bool(reader.decrypt(""))
    except (DependencyError, NotImplementedError, PdfReadError):
        return False


def _page_paragraphs(text: str) -> list[str]:
    """Join the visual lines pypdf returns into paragraphs.

    A line ending a sentence that is clearly shorter than the page's full lines ends a paragraph;
    every other line break is wrapping.
    """
    lines = [clean_inline(line) for line in text.split("\n")]
    width = max((len(line) for line in lines), default=0)
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if not line:
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        current = paragraphs[-1]
        if current and LIST_ITEM.match(line):
            paragraphs.append([line])
            continue
        current.append(line)
        if _SENTENCE_END.search(line) and len(line) < 0.75 * width:
            paragraphs.append([])
    result: list[str] = []
    for paragraph in paragraphs:
        if not paragraph:
            continue
        joined = paragraph[0]
        for line in paragraph[1:]:
            # A line-end hyphen before a lowercase letter is a word split by wrapping.
            if joined.endswith("-") and line[:1].islower() and joined[-2:-1].isalpha():
                joined = joined[:-1] + line
            else:
                joined = f"{joined} {line}"
        result.append(joined)
    return result
