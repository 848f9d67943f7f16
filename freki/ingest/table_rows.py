"""Tables in chunks: a Markdown table (``freki.ingest.parsing.tables``) is cut only between rows, and every
piece repeats the header.

A table that fits the chunk window is one unit: the chunker never cuts inside it. A larger one becomes
pieces of whole rows, packed from its top up to a target size (the chunker's ``min_tokens``: a lookup of
one row is found far more often in a chunk of a few rows than in one of a window's worth, see
docs/decisions/0121-tables.md), each starting with the header and separator lines, so every chunk of a
table can be read on its own ("which column is this cell in?"). A row over the target still goes whole
when it fits a chunk. A piece ends at a row its content marks (``_content_cut``), not where the size runs
out, so an edited row changes its own piece and at most a piece or two after it.

The one case a row is cut: a single row that does not fit the window even alone under its header. It is
cut between words into parts, each under the header, and counted (``TablePieces.rows_cut``; the chunker
logs it). A header too large to repeat with even one word of a row leaves the table as plain lines.
"""

from __future__ import annotations

import hashlib
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


def table_pieces(table: str, fits: Callable[[str], bool], max_words: int,
                 fits_piece: Callable[[str], bool] | None = None) -> TablePieces:
    """Cut a Markdown table into pieces that each satisfy ``fits``, of whole rows where a row fits at all.

    Args:
        table: A paragraph ``freki.ingest.parsing.tables.is_table`` accepts.
        fits: Whether a text fits one chunk (tokens and model window); a table that fits is one piece.
        max_words: Upper bound on the words (and so the rows) of a fitting text.
        fits_piece: The size pieces of a larger table aim at (None: ``fits``).
    """
    if fits(table):
        return TablePieces([table], PARAGRAPH)
    target = fits_piece or fits
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
        while low < high:  # the most rows from `start` that fit the piece target under the header
            middle = (low + high + 1) // 2
            if target("\n".join([header, *rows[start:middle]])):
                low = middle
            else:
                high = middle - 1
        low = _content_cut(rows, start, low)
        if low == start and fits(f"{header}\n{rows[start]}"):
            low = start + 1  # a row over the target still goes whole when it fits a chunk
        if low == start:
            parts = split_to_fit(rows[start], lambda part: fits(f"{header}\n{part}"), max_words)
            pieces.extend(f"{header}\n{part}" for part in parts)
            cut += 1
            start += 1
        else:
            pieces.append("\n".join([header, *rows[start:low]]))
            start = low
    return TablePieces(pieces, PARAGRAPH, rows_cut=cut)


# One row in this many (by its text's hash) is a preferred place to end a piece.
_CUT_ONE_IN = 4


def _content_cut(rows: list[str], start: int, end: int) -> int:
    """Where a piece starting at ``start`` ends, at most ``end``: after the first row, past half the rows that
    fit, whose hash marks it as a cut (content-defined, as backup tools cut files), else at ``end``.

    Cutting where the content says rather than where the size runs out lets the pieces after an edited row
    fall back onto their old boundaries within a piece or two, so incremental re-indexing re-embeds those
    and not the rest of the table.
    """
    for stop in range(start + max(1, (end - start + 1) // 2), end):
        if hashlib.sha1(rows[stop - 1].encode()).digest()[0] % _CUT_ONE_IN == 0:
            return stop
    return end
