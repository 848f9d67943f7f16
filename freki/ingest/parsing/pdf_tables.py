"""Tables on PDF pages, found with pdfplumber: ruled tables from the lines drawn, borderless ones from words
standing in aligned columns; the page's other text around them, in reading order.

Only pages ``freki.ingest.parsing.pdf`` marks as candidates come here (pdfminer's layout analysis is
several times slower than pypdf's text layer; docs/decisions/0121-tables.md has the figures). A page where
no table is confirmed keeps pypdf's text.

Borderless tables are read from word positions: a line whose words fall into runs separated by gaps wider
than the text height is "columnar", and three or more consecutive columnar lines sharing at least two
column starts are a table, one row a line, provided its cells are short (the median run at most 4 words:
the lines of a two-column page layout also align, but are prose). Cells that wrap onto a second line
become rows of their own, and columns aligned only on their right edge are not seen; ruled tables have
neither limit.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pdfplumber

# Gaps between the columns of a borderless table are wider than this many text heights; gaps between words
# of prose are a fraction of one.
_COLUMN_GAP = 1.0
# Column starts closer than this many points are the same column.
_ALIGN_PT = 3.0
_MIN_BORDERLESS_ROWS = 3
# Cells are short; lines of a two-column page layout are not (their median run is a line of prose).
_MAX_MEDIAN_CELL_WORDS = 4


@dataclass(frozen=True)
class PageBlock:
    """A run of the page's text lines (``rows`` empty) or a table (``rows``: cell texts), in reading order."""

    text: str = ""
    rows: tuple[tuple[str, ...], ...] = ()


def read_pages(data: bytes, pages: Sequence[int], borderless: set[int]) -> Iterator[tuple[int, list[PageBlock]]]:
    """For each candidate page (0-based) holding a table, its blocks; pages without a table are skipped.

    ``borderless`` are the candidates whose text looked columnar (worth looking for a table without lines).
    """
    if not pages:
        return
    with pdfplumber.open(io.BytesIO(data), pages=[number + 1 for number in pages]) as pdf:
        for number, page in zip(pages, pdf.pages, strict=True):
            try:
                blocks = _page_blocks(page, number in borderless)
            finally:
                page.close()  # drops the page's cached layout objects
            if blocks is not None:
                yield number, blocks


def _page_blocks(page: Any, borderless: bool) -> list[PageBlock] | None:
    found: list[tuple[tuple[float, float, float, float], list[list[str]]]] = []
    for table in page.find_tables():
        rows = [[cell or "" for cell in row] for row in table.extract()]
        if _is_grid(rows):
            found.append((table.bbox, rows))
    if not found and borderless:
        found = _borderless_tables(page)
    if not found:
        return None
    boxes = [box for box, _ in found]
    outside = page.filter(lambda obj: obj.get("object_type") != "char" or not _inside(obj, boxes))
    items: list[tuple[float, PageBlock | str]] = [(line["top"], line["text"]) for line in outside.extract_text_lines()]
    items.extend((box[1], PageBlock(rows=tuple(tuple(r) for r in rows))) for box, rows in found)
    items.sort(key=lambda item: (item[0], isinstance(item[1], str)))
    blocks: list[PageBlock] = []
    lines: list[str] = []
    for _, item in items:
        if isinstance(item, str):
            lines.append(item)
            continue
        if lines:
            blocks.append(PageBlock(text="\n".join(lines)))
            lines = []
        blocks.append(item)
    if lines:
        blocks.append(PageBlock(text="\n".join(lines)))
    return blocks


def _is_grid(rows: list[list[str]]) -> bool:
    """A table worth the name: two rows and two columns with text (a box drawn around a paragraph is not)."""
    filled = [row for row in rows if any(cell.strip() for cell in row)]
    columns = {col for row in filled for col, cell in enumerate(row) if cell.strip()}
    return len(filled) >= 2 and len(columns) >= 2


def _inside(obj: dict[str, Any], boxes: list[tuple[float, float, float, float]]) -> bool:
    x = (obj["x0"] + obj["x1"]) / 2
    y = (obj["top"] + obj["bottom"]) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)


def _borderless_tables(page: Any) -> list[tuple[tuple[float, float, float, float], list[list[str]]]]:
    lines = _segmented_lines(page.extract_words())
    tables = []
    run: list[list[dict[str, Any]]] = []
    for line in [*lines, []]:
        if len(line) >= 2 and (not run or _shared_starts(run[-1], line) >= 2):
            run.append(line)
            continue
        if len(run) >= _MIN_BORDERLESS_ROWS and _short_cells(run):
            tables.append(_table_of(run))
        run = [line] if len(line) >= 2 else []
    return tables


def _segmented_lines(words: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Words grouped into lines (by top), each line's words merged into segments split at wide gaps."""
    rows: list[list[dict[str, Any]]] = []
    for word in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if rows and abs(rows[-1][0]["top"] - word["top"]) <= 2:
            rows[-1].append(word)
        else:
            rows.append([word])
    lines = []
    for row in rows:
        row.sort(key=lambda w: w["x0"])
        segments = [dict(row[0])]
        for word in row[1:]:
            last = segments[-1]
            if word["x0"] - last["x1"] > _COLUMN_GAP * (word["bottom"] - word["top"]):
                segments.append(dict(word))
            else:
                last["text"] = f"{last['text']} {word['text']}"
                last["x1"], last["bottom"] = word["x1"], max(last["bottom"], word["bottom"])
        lines.append(segments)
    return lines


def _short_cells(run: list[list[dict[str, Any]]]) -> bool:
    words = sorted(len(segment["text"].split()) for line in run for segment in line)
    return words[len(words) // 2] <= _MAX_MEDIAN_CELL_WORDS


def _shared_starts(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int:
    return sum(1 for s in b if any(abs(s["x0"] - t["x0"]) <= _ALIGN_PT for t in a))


def _table_of(run: list[list[dict[str, Any]]]) -> tuple[tuple[float, float, float, float], list[list[str]]]:
    starts: list[float] = []
    for x0 in sorted(s["x0"] for line in run for s in line):
        if not starts or x0 - starts[-1] > _ALIGN_PT:
            starts.append(x0)
    rows = []
    for line in run:
        cells = [""] * len(starts)
        for segment in line:
            column = max(i for i, x0 in enumerate(starts) if x0 <= segment["x0"] + _ALIGN_PT)
            cells[column] = f"{cells[column]} {segment['text']}".strip()
        rows.append(cells)
    segments = [s for line in run for s in line]
    box = (min(s["x0"] for s in segments), min(s["top"] for s in segments),
           max(s["x1"] for s in segments), max(s["bottom"] for s in segments))
    return box, rows
