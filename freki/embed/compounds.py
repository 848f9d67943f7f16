"""German compound splitting for the lexical analyzer, by CharSplit (``compound-split``).

German writes compounds as one word ("Mietvertrag", "Dateisystem"): a query for "Vertrag" or "System"
never meets them by stemming alone. CharSplit scores each split point by how often the candidate head and
tail end and begin words in German Wikipedia (ngram probabilities shipped inside the package, no model to
download); a word whose best split scores above ``MIN_SCORE`` is indexed whole *and* as its two parts, each
part split again the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

MIN_WORD_CHARS = 8  # shorter words are rarely compounds, and their splits are mostly wrong
MIN_PART_CHARS = 3
MIN_SCORE = 0.5


@lru_cache(maxsize=200_000)
def split_german(word: str) -> tuple[str, ...]:
    """The parts of a lower-case German compound, or ``()`` when it is not one (by CharSplit's best split)."""
    if len(word) < MIN_WORD_CHARS or not word.isalpha():
        return ()
    from compound_split import char_split  # loads its ngram tables (~1 s) the first time a word is long

    candidates = char_split.split_compound(word)
    if not candidates:
        return ()
    score, head, tail = candidates[0][0], candidates[0][1].lower(), candidates[0][2].lower()
    if score < MIN_SCORE or min(len(head), len(tail)) < MIN_PART_CHARS:
        return ()
    return (*(split_german(head) or (head,)), *(split_german(tail) or (tail,)))


def german_compound_terms(word_terms: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``word_terms`` of a word, followed by those of its compound parts."""
    def terms(word: str) -> list[str]:
        whole = word_terms(word)
        if not whole:
            return whole
        return whole + [t for part in split_german(word) for t in word_terms(part)]
    return terms
