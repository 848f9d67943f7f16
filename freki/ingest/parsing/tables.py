"""Tables as Markdown pipe tables: one line a row, the header first, then a separator line.

Every parser that meets a table (PDF, DOCX, HTML, spreadsheets, slides) renders it here, so the chunker sees
one shape: a paragraph whose lines all start with ``|`` is a table, its first two lines are the header and
the separator, and each further line is one row (``freki.ingest.segmenting`` never cuts a row and repeats
the header when a table is split).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_SPACE = re.compile(r"\s+")
_TABLE_LINE = re.compile(r"^\|.*\|$")
SEPARATOR = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


def cell_text(value: object) -> str:
    """One cell as a single line: whitespace collapsed, pipes escaped (a cell never splits a row)."""
    if value is None:
        return ""
    text = _SPACE.sub(" ", str(value)).strip()
    return text.replace("|", "\\|")


def markdown_table(rows: Iterable[Sequence[object]], *, header: Sequence[object] | None = None) -> str:
    """Render rows as a Markdown pipe table; empty string when there is nothing in it.

    Args:
        rows: The body rows (or every row, when ``header`` is None: the first non-empty row is the header).
        header: Column names; None takes the first row.

    Rows shorter than the widest are padded; rows with no text at all are dropped, as are columns that are
    empty in every row.
    """
    cells = [[cell_text(value) for value in row] for row in rows]
    if header is not None:
        cells.insert(0, [cell_text(value) for value in header])
    cells = [row for row in cells if any(row)]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    keep = [col for col in range(width) if any(row[col] for row in cells)]
    cells = [[row[col] for col in keep] for row in cells]
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    lines.insert(1, "|" + "|".join(" --- " for _ in keep) + "|")
    return "\n".join(lines)


def is_table(paragraph: str) -> bool:
    """Whether a paragraph is a Markdown pipe table (every line ``|…|``, the second a separator)."""
    lines = paragraph.strip("\n").split("\n")
    return len(lines) >= 2 and all(_TABLE_LINE.match(line) for line in lines) and bool(SEPARATOR.match(lines[1]))
