"""Markdown (CommonMark + tables, via markdown-it-py): YAML frontmatter as metadata, headings as sections,
markup reduced to plain text.

Paragraphs follow the source: blocks that touch (no blank line between them, e.g. a sentence and the list
under it, or the items of a tight list) form one paragraph whose lines keep their breaks where they are
list items; blocks separated by a blank line are separate paragraphs. Code keeps its lines; a table is a
paragraph of its own, a Markdown pipe table (``freki.ingest.parsing.tables``).
markdown-it-py stops nesting at ``maxNesting`` levels, so a pathologically nested document cannot recurse
the parser to death.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token

from freki.ingest.parsing.document import ParsedDocument, SectionBuilder, build_document
from freki.ingest.parsing.frontmatter import split_frontmatter
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.links import extract_links
from freki.ingest.parsing.tables import markdown_table
from freki.ingest.parsing.text import clean_inline, decode_text, lines_to_paragraphs

_TAGS = re.compile(r"<!--.*?-->|</?[A-Za-z][^>]*>", re.DOTALL)
_MAX_NESTING = 20


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).enable(["table", "strikethrough"])


def inline_text(token: Token) -> list[str]:
    """Plain lines of an inline token: markup dropped, link and image text kept, soft and hard breaks as lines."""
    lines = [""]
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            lines[-1] += child.content
        elif child.type == "image":
            lines[-1] += "".join(c.content for c in child.children or []) or child.content
        elif child.type in ("softbreak", "hardbreak"):
            lines.append("")
    return lines


class _Walker:
    """Turns markdown-it's block tokens into SectionBuilder headings and paragraphs."""

    def __init__(self, builder: SectionBuilder) -> None:
        self.builder = builder
        self._lines: list[str] = []  # lines of the paragraph being gathered
        self._hard: set[int] = set()  # indices in _lines that start a line of their own (items, rows)
        self._end = -1  # source line after the last gathered block

    def walk(self, tokens: Sequence[Token]) -> None:
        items: list[str] = []  # markers of the open list items ("- " or "3. ")
        counters: list[int] = []
        rows: list[list[str]] = []  # cells of the table being read
        for index, token in enumerate(tokens):
            kind = token.type
            if kind == "heading_open":
                self._flush()
                self.builder.heading(int(token.tag[1]), clean_inline(" ".join(inline_text(tokens[index + 1]))))
            elif kind in ("bullet_list_open", "ordered_list_open"):
                counters.append(int(token.attrs.get("start", 1) or 1) if kind == "ordered_list_open" else 0)
            elif kind in ("bullet_list_close", "ordered_list_close"):
                counters.pop()
            elif kind == "list_item_open":
                if counters and counters[-1]:
                    items.append(f"{counters[-1]}{token.markup} ")
                    counters[-1] += 1
                else:
                    items.append("- ")
            elif kind == "list_item_close":
                items.pop()
            elif kind == "inline" and tokens[index - 1].type == "paragraph_open":
                marker = items[-1] if items and tokens[index - 2].type == "list_item_open" else ""
                lines = inline_text(token)
                lines[0] = marker + lines[0]
                self._add(lines, token.map, hard_first=bool(marker))
            elif kind in ("fence", "code_block"):
                self._flush()
                self.builder.paragraph("\n".join(line.rstrip() for line in token.content.split("\n") if line.strip()))
            elif kind == "html_block":
                self._add([clean_inline(line) for line in _TAGS.sub("", token.content).split("\n")], token.map)
            elif kind == "table_open":
                self._flush()
                rows = []
            elif kind == "tr_open":
                rows.append([])
            elif kind == "inline" and tokens[index - 1].type in ("th_open", "td_open"):
                rows[-1].append(clean_inline(" ".join(inline_text(token))))
            elif kind == "table_close":
                # A table is a paragraph of its own, in the one table shape every parser uses.
                self.builder.paragraph(markdown_table(rows))
            elif kind == "hr":
                self._flush()
        self._flush()

    def _add(self, lines: list[str], span: list[int] | None, *, hard_first: bool = False) -> None:
        if span is not None and self._lines and span[0] != self._end:
            self._flush()
        if hard_first:
            self._hard.add(len(self._lines))
        self._lines.extend(lines)
        if span is not None:
            self._end = span[1]

    def _flush(self) -> None:
        if self._lines:
            for paragraph in lines_to_paragraphs(self._lines, hard=frozenset(self._hard)):
                self.builder.paragraph(paragraph)
        self._lines, self._hard, self._end = [], set(), -1


def parse_markdown(data: str | bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse markdown into sections by heading, with frontmatter as metadata."""
    metadata, body, _ = split_frontmatter(decode_text(data, source=source), source=source, limits=limits)
    builder = SectionBuilder()
    walker = _Walker(builder)
    tokens = _parser().parse(body)
    walker.walk(tokens)
    sections = builder.finish()
    title = metadata.get("title") or (builder.first_heading[1] if builder.first_heading else "")
    title = ", ".join(title) if isinstance(title, list) else title
    links = extract_links(tokens, (limits or ParseLimits()).max_links)
    return build_document(sections, title=title, content_type="markdown", metadata=metadata, links=links)
