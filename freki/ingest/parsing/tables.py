"""Tables as Markdown pipe tables: one line a row, the header first, then a separator line.

Every parser that meets a table (PDF, DOCX, HTML, spreadsheets, slides) renders it here, so the chunker sees
one shape: a paragraph whose lines all start with ``|`` is a table, its first two lines are the header and
the separator, and each further line is one row (``freki.ingest.segmenting`` never cuts a row and repeats
the header when a table is split).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from freki.ingest.parsing.errors import LimitExceeded, describe_source
from freki.ingest.parsing.guards import ParseLimits

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


def check_table_size(rows: Sequence[Sequence[object]], limits: ParseLimits, *, source: str = "") -> None:
    """Refuse a table with more rows or columns than ``limits.table_max_rows`` / ``limits.table_max_columns``."""
    name = describe_source(source)
    if len(rows) > limits.table_max_rows:
        raise LimitExceeded(
            f"document {name} has a table of {len(rows):,} rows; the limit is {limits.table_max_rows:,} "
            "(limits.table_max_rows)", setting="limits.table_max_rows", source=source,
        )
    columns = max((len(row) for row in rows), default=0)
    if columns > limits.table_max_columns:
        raise LimitExceeded(
            f"document {name} has a table of {columns:,} columns; the limit is {limits.table_max_columns:,} "
            "(limits.table_max_columns)", setting="limits.table_max_columns", source=source,
        )


def table_text(rows: Sequence[Sequence[object]], *, header: Sequence[object] | None = None) -> str:
    """A table as section text: a Markdown table, or, for a one-column (layout) table, its cells as paragraphs."""
    cells = [[cell_text(value) for value in row] for row in ([header] if header is not None else []) + list(rows)]
    used = {col for row in cells for col, value in enumerate(row) if value}
    if len(used) <= 1:
        column = next(iter(used), 0)
        return "\n\n".join(row[column] for row in cells if len(row) > column and row[column]).replace("\\|", "|")
    return markdown_table(rows, header=header)
