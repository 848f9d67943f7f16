"""HTML: title, visible text and headings as sections, using the standard library's tolerant parser; tables
become Markdown tables (``freki.ingest.parsing.html_tables``, ``freki.ingest.parsing.tables``)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from freki.ingest.parsing.document import ParsedDocument, SectionBuilder, build_document
from freki.ingest.parsing.errors import RefusedStructure, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.html_tables import HtmlTable, flatten
from freki.ingest.parsing.tables import check_table_size, table_text
from freki.ingest.parsing.text import clean_inline, decode_text

# Content a reader never sees (or navigation chrome repeated on every page) is not indexed.
_SKIP = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe", "object", "head"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track"}
    | {"wbr"}
)
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "legend", "main", "ol",
        "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot", "ul",
    }
)
_LINE = frozenset({"li", "tr", "br"})
_HEADING = re.compile(r"^h([1-6])$")
_META_KEYS = {"description": "description", "author": "author", "keywords": "keywords"}
# Elements an HTML parser closes implicitly when the same element starts again (<li>a<li>b is two items).
_SELF_CLOSING = frozenset({"p", "li", "dt", "dd", "tr", "td", "th", "option"})
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""", re.IGNORECASE)


class _Extractor(HTMLParser):
    def __init__(self, limits: ParseLimits, source: str = "") -> None:
        super().__init__(convert_charrefs=True)
        self._open: list[str] = []  # open elements, for the nesting limit
        self._limits = limits
        self._max_depth = limits.html_max_depth
        self._source = source
        self.builder = SectionBuilder()
        self.title = ""
        self.metadata: dict[str, str] = {}
        self._skip: list[str] = []
        self._in_title = False
        self._pre = 0
        self._heading: int | None = None
        self._heading_text: list[str] = []
        self._lines: list[str] = []  # finished lines of the current paragraph
        self._line: list[str] = []  # text pieces of the current line
        self._tables: list[HtmlTable] = []  # open tables, innermost last

    def _nest(self, tag: str) -> None:
        if tag in _SELF_CLOSING and self._open and self._open[-1] == tag:
            self._open.pop()
        self._open.append(tag)
        if len(self._open) > self._max_depth:
            raise RefusedStructure(
                f"HTML document {describe_source(self._source)} nests elements deeper than {self._max_depth} "
                "levels (limits.html_max_depth)", source=self._source,
            )

    def _unnest(self, tag: str) -> None:
        if tag in self._open:
            while self._open.pop() != tag:
                pass

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag not in _VOID:
            self._nest(tag)
        if tag == "title":
            self._in_title = True
        elif tag == "meta":
            key = _META_KEYS.get(attributes.get("name", "").lower())
            if key and attributes.get("content", "").strip():
                self.metadata[key] = clean_inline(attributes["content"])
        elif tag == "html" and attributes.get("lang"):
            self.metadata["language"] = attributes["lang"]
        if tag in _VOID:
            if self._tables and not self._skip:
                self._tables[-1].text(" ")
            elif tag in _LINE:
                self._end_line()
            elif tag in _BLOCK:
                self._end_paragraph()
            return
        if self._skip or tag in _SKIP or "hidden" in attributes or attributes.get("aria-hidden") == "true":
            self._skip.append(tag)
            return
        if tag == "table" or self._tables:
            self._table_start(tag, attributes)
            return
        heading = _HEADING.match(tag)
        if heading:
            self._end_paragraph()
            self._heading = int(heading.group(1))
            self._heading_text = []
        elif tag in _BLOCK:
            self._end_paragraph()
            if tag == "pre":
                self._pre += 1
        elif tag in _LINE:
            self._end_line()

    def handle_endtag(self, tag: str) -> None:
        self._unnest(tag)
        if tag == "title":
            self._in_title = False
        if self._skip:
            if tag in self._skip:
                while self._skip and self._skip.pop() != tag:
                    pass
            return
        if self._tables:
            self._table_end(tag)
            return
        if _HEADING.match(tag) and self._heading is not None:
            self.builder.heading(self._heading, clean_inline("".join(self._heading_text)))
            self._heading = None
        elif tag in _BLOCK:
            self._end_paragraph()
            if tag == "pre":
                self._pre = max(0, self._pre - 1)
        elif tag in _LINE:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        if self._tables:
            self._tables[-1].text(data)
        elif self._heading is not None:
            self._heading_text.append(data)
        elif self._pre:
            lines = data.split("\n")
            for number, line in enumerate(lines):
                if number:
                    self._end_line(keep_blank=True)
                self._line.append(line)
        else:
            self._line.append(re.sub(r"\s+", " ", data))

    def _table_start(self, tag: str, attributes: dict[str, str]) -> None:
        if tag == "table":
            if not self._tables:
                self._end_paragraph()
            self._tables.append(HtmlTable(self._limits))
            return
        table = self._tables[-1]
        if tag == "tr":
            table.start_row()
        elif tag in ("td", "th"):
            table.start_cell(attributes)
        elif tag == "caption":
            table.in_caption = True
        elif tag in _BLOCK or tag in _LINE or _HEADING.match(tag):
            table.text(" ")  # blocks inside a cell are words of the cell

    def _table_end(self, tag: str) -> None:
        table = self._tables[-1]
        if tag in ("td", "th"):
            table.end_cell()
        elif tag == "tr":
            table.end_row()
        elif tag == "caption":
            table.in_caption = False
        elif tag in _BLOCK or tag in _LINE or _HEADING.match(tag):
            table.text(" ")
        if tag != "table":
            return
        rows = self._tables.pop().finish()
        check_table_size(rows, self._limits, source=self._source)
        if self._tables:
            self._tables[-1].text(f" {flatten(rows)} ")
            return
        self.builder.paragraph(clean_inline("".join(table.caption)))
        self.builder.paragraph(table_text(rows))

    def _end_line(self, keep_blank: bool = False) -> None:
        text = "".join(self._line)
        line = text.rstrip() if self._pre else clean_inline(text).strip(" |")
        if line.strip() or keep_blank and self._lines:
            self._lines.append(line)
        self._line = []

    def _end_paragraph(self) -> None:
        self._end_line()
        self.builder.paragraph("\n".join(line for line in self._lines if line.strip()))
        self._lines = []

    def close(self) -> None:
        super().close()
        while self._tables:  # a table never closed ends with the document
            self._table_end("table")
        self._end_paragraph()


def sniff_charset(data: bytes) -> str:
    """The encoding a `<meta charset>` declares in the first 2 KB, or ""."""
    match = _CHARSET.search(data[:2048])
    return match.group(1).decode("ascii") if match else ""


def parse_html(data: str | bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse HTML into sections by h1-h6, ignoring scripts, styles, navigation and hidden elements.

    Raises:
        RefusedStructure: elements nest deeper than ``limits.html_max_depth``.
        LimitExceeded: a table has more rows or columns than ``limits.table_max_rows`` / ``table_max_columns``.
    """
    fallback = sniff_charset(data) if isinstance(data, bytes) else ""
    text = decode_text(data, source=source, fallback_encoding=fallback)
    extractor = _Extractor(limits or ParseLimits(), source)
    extractor.feed(text)
    extractor.close()
    sections = extractor.builder.finish()
    first = extractor.builder.first_heading
    title = clean_inline(extractor.title) or (first[1] if first else "")
    return build_document(sections, title=title, content_type="html", metadata=extractor.metadata)
