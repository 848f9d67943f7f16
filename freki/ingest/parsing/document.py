"""The parsed form of a document: plain text split into sections in reading order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from freki.ingest.parsing.links import Link

# A metadata value is a string or a list of strings (freki.store.metadata stores and filters them).
MetaValue = str | list[str]
Metadata = dict[str, MetaValue]


@dataclass(frozen=True)
class Section:
    """A run of text under one heading (or on one PDF page, slide or sheet).

    `text` starts with the section's own heading as a paragraph of its own. Paragraphs are separated by a
    blank line; a single newline inside a paragraph is a hard break (list item, table row, code line) —
    wrapped prose lines are joined by the parsers, so a newline never falls mid-sentence.
    """

    text: str
    heading: str = ""
    heading_path: tuple[str, ...] = ()
    # Where the text sits in the original, for citations: a PDF or scanned page (1-based), a slide
    # (1-based), a spreadsheet's sheet name. Each becomes chunk metadata of the same name.
    page: int | None = None
    slide: int | None = None
    sheet: str = ""


@dataclass(frozen=True)
class ParsedDocument:
    """A document reduced to plain text, with document-level metadata and sections."""

    text: str
    title: str
    content_type: str
    metadata: Metadata = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    # Typed links to other documents (Markdown only: freki.ingest.parsing.links).
    links: list[Link] = field(default_factory=list)


def build_document(
    sections: list[Section], *, title: str, content_type: str, metadata: Mapping[str, MetaValue],
    links: list[Link] | None = None,
) -> ParsedDocument:
    """Assemble a ParsedDocument, dropping sections without text and deriving the full text."""
    kept = [s for s in sections if s.text.strip()]
    return ParsedDocument(
        text="\n\n".join(s.text for s in kept),
        title=title,
        content_type=content_type,
        metadata=dict(metadata),
        sections=kept,
        links=links or [],
    )


class SectionBuilder:
    """Collects headings and paragraphs in reading order and cuts them into sections.

    A heading with no text of its own before the next heading yields no section: its title lives on in
    the `heading_path` of the sections below it.
    """

    def __init__(self, page: int | None = None) -> None:
        self._path: list[tuple[int, str]] = []
        self._paragraphs: list[str] = []
        self._has_body = False
        self._page = page
        self.sections: list[Section] = []
        self.first_heading: tuple[int, str] | None = None

    def heading(self, level: int, text: str) -> None:
        """Start a new section under a heading of `level` (1 = top)."""
        text = " ".join(text.split())
        if not text:
            return
        self._flush()
        if self.first_heading is None or level < self.first_heading[0]:
            self.first_heading = (level, text)
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        self._path.append((level, text))
        self._paragraphs = [text]

    def paragraph(self, text: str) -> None:
        """Add a paragraph (may contain hard line breaks) to the current section."""
        text = text.strip("\n")
        if text.strip():
            self._paragraphs.append(text)
            self._has_body = True

    def finish(self) -> list[Section]:
        """Close the last section and return all of them."""
        self._flush()
        return self.sections

    def _flush(self) -> None:
        if self._has_body:
            path = tuple(title for _, title in self._path)
            self.sections.append(
                Section(
                    text="\n\n".join(self._paragraphs),
                    heading=path[-1] if path else "",
                    heading_path=path,
                    page=self._page,
                )
            )
        self._paragraphs = []
        self._has_body = False
