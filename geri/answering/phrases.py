"""Whole phrases of a sentence: the runs of words between its stop words and punctuation.

The span rules (geri/answering/spans.py) favour one-word spans, so a gold answer of several words ("City of
Edinburgh Council", "11.4 million", "Ancient Greeks") is often ranked below pieces of itself. A phrase here is
a maximal run of words holding no stop word (number words such as "million" or "five" are kept: they are
part of a quantity) and no punctuation inside, except a joining word ("of", "the", "de", …) between two
capitalised words, which keeps a name whole. The model's chooser (geri/answering/span_scoring.py) gives the
rules' best whole phrases a place among the candidates it scores.
"""

from __future__ import annotations

import re

from geri.answering.evidence import stop_words
from geri.answering.spans import EDGE_PUNCTUATION, NUMBER_WORDS, trimmed

_TOKEN = re.compile(r"\S+")
# Inside a name between two capitalised words ("City of Edinburgh Council", "Charles de Gaulle").
_JOINING = frozenset({"of", "the", "and", "de", "du", "la", "le", "von", "van"})
_ENDS_PHRASE = ",.;:!?)\"”"
_OPENS_PHRASE = "(\"“'"


def whole_phrases(sentence: str, language: str = "en") -> list[str]:
    """The phrases of ``sentence`` in order (see the module docstring), each a substring of it, trimmed of
    punctuation at its ends; duplicates kept once."""
    stop = stop_words(language)
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(sentence)]
    phrases: list[str] = []
    run: list[tuple[int, int]] = []

    def close() -> None:
        while run and sentence[run[-1][0]:run[-1][1]].strip(EDGE_PUNCTUATION).lower() in _JOINING:
            run.pop()  # a joining word at the end joins nothing
        phrase = trimmed(sentence, run[0][0], run[-1][1]) if run else ""
        if phrase and phrase not in phrases:
            phrases.append(phrase)
        run.clear()

    for i, (start, end) in enumerate(tokens):
        word = sentence[start:end]
        core = word.strip(EDGE_PUNCTUATION)
        if not core:
            close()
            continue
        if word[0] in _OPENS_PHRASE:
            close()
        lower = core.lower()
        if lower in stop and lower not in NUMBER_WORDS:
            before = sentence[run[-1][0]:run[-1][1]] if run else ""
            after = sentence[tokens[i + 1][0]:tokens[i + 1][1]].strip(EDGE_PUNCTUATION) if i + 1 < len(tokens) else ""
            if (lower in _JOINING and before[:1].isupper() and before[-1] not in _ENDS_PHRASE
                    and after[:1].isupper()):
                run.append((start, end))
            else:
                close()
            continue
        run.append((start, end))
        if word[-1] in _ENDS_PHRASE:
            close()
    close()
    return phrases
