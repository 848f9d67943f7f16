"""Cutting a text that is too long for one chunk into pieces that fit, at word (else character) boundaries.

The chunker uses it for a sentence longer than a chunk's new-text budget, and for the one case a table row
may be cut: a single row that does not fit the window even alone under its header (``freki.ingest.table_rows``).

Hostile text (a 5-million-character "word") must cost time in proportion to its length and stop at the
request's deadline: no token count ever sees more than ``max_chars`` characters (no token is anywhere near
``TOKEN_CHARS`` characters long, so a longer text cannot fit), a piece's end is found by doubling then
bisecting from a small guess (each count sees about one piece), and ``check`` runs between pieces.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

TOKEN_CHARS = 256  # more characters than any token of the counters in use


def split_to_fit(text: str, fits: Callable[[str], bool], max_words: int,
                 check: Callable[[str], None] = lambda _: None) -> list[str]:
    """Pieces of ``text``, in order, each accepted by ``fits``; cut between words, a lone huge word by characters.

    Args:
        text: The text to cut (whitespace between words becomes one space).
        fits: Whether a piece is small enough.
        max_words: An upper bound on the tokens (so on the words) of a fitting piece; bounding the search
            keeps a huge unpunctuated text linear, not quadratic.
        check: Raises when the work must stop (the request's deadline); called between pieces.
    """
    max_chars = TOKEN_CHARS * max(1, max_words)

    def small_enough(piece: str) -> bool:
        return len(piece) <= max_chars and fits(piece)

    words = text.split()
    pieces: list[str] = []
    start = 0
    while start < len(words):
        check("cutting an oversize sentence")
        end = _longest(partial(_words_fit, small_enough, words, start), min(len(words) - start, max(1, max_words)))
        piece = " ".join(words[start:start + max(1, end)])
        pieces.extend([piece] if end else _split_characters(piece, small_enough, max_chars, check))
        start += max(1, end)
    return pieces


def _split_characters(word: str, fits: Callable[[str], bool], max_chars: int,
                      check: Callable[[str], None]) -> list[str]:
    pieces: list[str] = []
    start = 0
    while start < len(word):
        check("cutting an oversize word")
        # At least one character per piece, so a character that fits nothing alone still makes progress.
        end = max(1, _longest(partial(_characters_fit, fits, word, start), min(len(word) - start, max_chars)))
        pieces.append(word[start:start + end])
        start += end
    return pieces


def _words_fit(fits: Callable[[str], bool], words: list[str], start: int, n: int) -> bool:
    return fits(" ".join(words[start:start + n]))


def _characters_fit(fits: Callable[[str], bool], word: str, start: int, n: int) -> bool:
    return fits(word[start:start + n])


def _longest(fits_first: Callable[[int], bool], most: int) -> int:
    """The largest n in [0, most] with ``fits_first(n)`` (true up to some n, false beyond; 0 if none fits).

    Doubling from 16 then bisecting: the counts cost about as much as the piece found, not as ``most``."""
    if most < 1:
        return 0
    low, high = 0, most  # fits_first(low) holds (or low is 0); the answer is at most high
    probe = min(16, most)
    while probe < high and fits_first(probe):
        low, probe = probe, min(high, probe * 2)
    if probe == high and probe > low and fits_first(probe):
        return probe
    high = probe - 1 if probe > low else high
    while low < high:
        middle = (low + high + 1) // 2
        if fits_first(middle):
            low = middle
        else:
            high = middle - 1
    return low
