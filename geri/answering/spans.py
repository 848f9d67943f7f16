"""Short answers that are spans of the cited sentence.

A small model picks the sentence that states the answer far more reliably than it writes the answer, and
an answer that is the whole sentence is correct but long. The short answer is therefore a *span* of the
cited sentence: words copied from it, so it is grounded by construction. The candidates are the sentence's
runs of up to ``max_words`` words that say something the question does not (a span made only of the
question's own words, or of stop words, answers nothing), trimmed of punctuation at their ends.

:func:`snap` maps the model's own wording onto the candidate it overlaps most (SQuAD-style token F1,
ties to the shorter span): "He was born in the year 1879" against "... Einstein was born in 1879 in Ulm"
gives "1879".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from geri.answering.evidence import terms

_TOKEN = re.compile(r"\S+")
_EDGE = "\"'“”‘’«»()[]{}.,;:!?"
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = re.compile(r"[^\w\s]")
MAX_SPAN_WORDS = 8


def _normal_tokens(text: str) -> list[str]:
    """SQuAD's normalisation: lower case, no punctuation, no articles."""
    return _ARTICLES.sub(" ", _PUNCT.sub("", text.lower())).split()


def overlap_f1(prediction: str, reference: str) -> float:
    """Token F1 of ``prediction`` against ``reference`` (SQuAD normalisation)."""
    pred, ref = _normal_tokens(prediction), _normal_tokens(reference)
    common = sum((Counter(pred) & Counter(ref)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def candidate_spans(sentence: str, question: str = "", *, max_words: int = MAX_SPAN_WORDS,
                    language: str = "en") -> list[str]:
    """Runs of up to ``max_words`` words of ``sentence`` that carry a content term the question lacks,
    shortest first, without duplicates; each is a substring of ``sentence``."""
    words = [(m.start(), m.end()) for m in _TOKEN.finditer(sentence)]
    asked = terms(question, language) if question else set()
    seen: set[str] = set()
    out: list[tuple[int, int, str]] = []
    for i in range(len(words)):
        for j in range(i, min(len(words), i + max_words)):
            start, end = words[i][0], words[j][1]
            while start < end and sentence[start] in _EDGE:
                start += 1
            while end > start and sentence[end - 1] in _EDGE:
                end -= 1
            span = sentence[start:end]
            if not span or span in seen:
                continue
            said = terms(span, language)
            if not said or said <= asked:
                continue
            seen.add(span)
            out.append((j - i, i, span))
    return [span for _, _, span in sorted(out)]


def snap(answer: str, candidates: Sequence[str], question: str = "", language: str = "en") -> tuple[str, float]:
    """The candidate closest to ``answer`` and their overlap ("" and 0.0 when none overlaps).

    Overlap is the F1 of content terms, leaving out the question's own terms: an answer that repeats the
    question ("He was born in 1879") is matched on what it adds ("1879").
    """
    asked = terms(question, language) if question else set()
    wanted = terms(answer, language) - asked
    if not wanted:
        return "", 0.0
    best, best_f1 = "", 0.0
    for span in candidates:  # shortest first: a tie keeps the shorter span
        said = terms(span, language) - asked
        common = len(said & wanted)
        if not common:
            continue
        score = 2 * common / (len(said) + len(wanted))
        if score > best_f1:
            best, best_f1 = span, score
    return best, best_f1
