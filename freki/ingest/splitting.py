"""Cutting a text that is too long for one chunk into pieces that fit, at word (else character) boundaries.

The chunker uses it for a sentence longer than a chunk's new-text budget, and for the one case a table row
may be cut: a single row that does not fit the window even alone under its header (``freki.ingest.table_rows``).
"""

from __future__ import annotations

from collections.abc import Callable


def split_to_fit(text: str, fits: Callable[[str], bool], max_words: int) -> list[str]:
    """Pieces of ``text``, in order, each accepted by ``fits``; cut between words, a lone huge word by characters.

    Args:
        text: The text to cut (whitespace between words becomes one space).
        fits: Whether a piece is small enough.
        max_words: An upper bound on the words of a fitting piece (every word is at least one token, so a
            token budget will do); bounding the search keeps a huge unpunctuated text linear, not quadratic.
    """
    words = text.split()
    pieces: list[str] = []
    start = 0
    while start < len(words):
        low, high = start + 1, min(len(words), start + max(1, max_words))
        while low < high:  # largest end with words[start:end] fitting
            middle = (low + high + 1) // 2
            if fits(" ".join(words[start:middle])):
                low = middle
            else:
                high = middle - 1
        piece = " ".join(words[start:low])
        pieces.extend([piece] if fits(piece) else _split_characters(piece, fits, max_words))
        start = low
    return pieces


def _split_characters(word: str, fits: Callable[[str], bool], max_words: int) -> list[str]:
    pieces: list[str] = []
    while word:
        # No token is anywhere near 256 characters long; the bound keeps a huge word linear.
        low, high = 1, min(len(word), 256 * max(1, max_words))
        while low < high:
            middle = (low + high + 1) // 2
            if fits(word[:middle]):
                low = middle
            else:
                high = middle - 1
        pieces.append(word[:low])
        word = word[low:]
    return pieces
