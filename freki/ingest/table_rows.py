"""Tables in chunks: a Markdown table (``freki.ingest.parsing.tables``) is cut only between rows, and every
piece repeats the header.

A table that fits the chunk window is one unit: the chunker never cuts inside it. A larger one becomes
pieces of whole rows, packed from its top, each starting with the header and separator lines, so every
chunk of a table can be read on its own ("which column is this cell in?"). Packing from the top keeps an
edit's effect local to the piece it falls in and the pieces after it in the same table.

The one case a row is cut: a single row that does not fit the window even alone under its header. It is
cut between words into parts, each under the header, and counted (``TablePieces.rows_cut``; the chunker
logs it). A header too large to repeat with even one word of a row leaves the table as plain lines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from freki.ingest.sentences import LINE, PARAGRAPH
from freki.ingest.splitting import split_to_fit


@dataclass(frozen=True)
class TablePieces:
    """A table's pieces in order, the separator between consecutive pieces, and how many rows were cut."""

    texts: list[str]
    separator: str
    rows_cut: int = 0


def table_pieces(table: str, fits: Callable[[str], bool], max_words: int) -> TablePieces:
    """Cut a Markdown table into pieces that each satisfy ``fits``.

    Args:
        table: A paragraph ``freki.ingest.parsing.tables.is_table`` accepts.
        fits: Whether a text fits one chunk (tokens and model window).
        max_words: Upper bound on the words (and so the rows) of a fitting text.
    """
    if fits(table):
        return TablePieces([table], PARAGRAPH)
    lines = table.split("\n")
    header, rows = "\n".join(lines[:2]), lines[2:]
    if not rows or not fits(f"{header}\n| x |"):
        plain = [piece for line in lines for piece in split_to_fit(line, fits, max_words)]
        return TablePieces(plain, LINE, rows_cut=sum(1 for line in lines if not fits(line)))
    pieces: list[str] = []
    cut = 0
    start = 0
    while start < len(rows):
        low, high = start, min(len(rows), start + max(1, max_words))
        while low < high:  # the most rows from `start` that fit under the header
            middle = (low + high + 1) // 2
            if fits("\n".join([header, *rows[start:middle]])):
                low = middle
            else:
                high = middle - 1
        if low == start:
            parts = split_to_fit(rows[start], lambda part: fits(f"{header}\n{part}"), max_words)
            pieces.extend(f"{header}\n{part}" for part in parts)
            cut += 1
            start += 1
        else:
            pieces.append("\n".join([header, *rows[start:low]]))
            start = low
    return TablePieces(pieces, PARAGRAPH, rows_cut=cut)
