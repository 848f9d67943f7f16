"""HTML tables as rows of cells, for ``freki.ingest.parsing.html``: spans resolved, nested tables flattened.

A cell spanning columns gives its text once, then empty cells (the columns stay aligned); one spanning rows
repeats its text in each, so every row reads on its own. A table inside a cell becomes that cell's text,
cells joined by commas and rows by semicolons. The first row (a ``<thead>`` row or ``<th>`` cells where the
page has them) is the header. Spans are clamped to the table limits, so a hostile ``colspan`` cannot
allocate more cells than the limits would accept anyway.
"""

from __future__ import annotations

import re

from freki.ingest.parsing.guards import ParseLimits

_SPACE = re.compile(r"\s+")


def _span(value: str | None, cap: int) -> int:
    try:
        return max(1, min(int((value or "1").strip() or "1"), cap))
    except ValueError:
        return 1


class HtmlTable:
    """One ``<table>`` being read: rows of cell texts."""

    def __init__(self, limits: ParseLimits) -> None:
        self.rows: list[list[str]] = []
        self.caption: list[str] = []
        self.in_caption = False
        self._limits = limits
        self._cell: list[str] | None = None  # text pieces of the open cell
        self._colspan = 1
        self._rowspan = 1
        self._pending: dict[int, tuple[int, str]] = {}  # column -> (rows still spanned, text)

    @property
    def in_cell(self) -> bool:
        """Whether text now belongs to a cell."""
        return self._cell is not None

    def start_row(self) -> None:
        """A ``<tr>``: closes any open cell and row."""
        self.end_row()
        self.rows.append([])

    def start_cell(self, attributes: dict[str, str]) -> None:
        """A ``<td>`` or ``<th>``."""
        self.end_cell()
        if not self.rows:
            self.rows.append([])
        self._fill_spanned()
        self._cell = []
        self._colspan = _span(attributes.get("colspan"), self._limits.table_max_columns + 1)
        self._rowspan = _span(attributes.get("rowspan"), self._limits.table_max_rows + 1)

    def text(self, data: str) -> None:
        """Text inside the table: to the open cell, the caption, or nowhere (whitespace between cells)."""
        if self._cell is not None:
            self._cell.append(data)
        elif self.in_caption:
            self.caption.append(data)

    def end_cell(self) -> None:
        """A ``</td>`` / ``</th>`` (or an implied one)."""
        if self._cell is None:
            return
        text = _SPACE.sub(" ", "".join(self._cell)).strip()
        self._cell = None
        row = self.rows[-1]
        if self._rowspan > 1:
            self._pending[len(row)] = (self._rowspan - 1, text)
        row.extend([text] + [""] * (self._colspan - 1))

    def end_row(self) -> None:
        """A ``</tr>`` (or an implied one): cells still spanned from above fill the row's end."""
        self.end_cell()
        if self.rows:
            self._fill_spanned(to_end=True)

    def finish(self) -> list[list[str]]:
        """The rows once ``</table>`` is reached."""
        self.end_row()
        return self.rows

    def _fill_spanned(self, to_end: bool = False) -> None:
        row = self.rows[-1]
        while len(row) in self._pending or (to_end and self._pending and len(row) < max(self._pending) + 1):
            left, text = self._pending.pop(len(row), (0, ""))
            if left > 1:
                self._pending[len(row)] = (left - 1, text)
            row.append(text)


def flatten(rows: list[list[str]]) -> str:
    """A nested table as one line of text for the cell that holds it."""
    return "; ".join(", ".join(cell for cell in row if cell) for row in rows if any(row))
