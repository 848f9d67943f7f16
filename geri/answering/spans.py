"""Short answers: the phrase of the cited source that answers, copied from it.

The small model picks the right *source* far more often than it writes a correct answer or cites the
right sentence (docs/decisions/0191-short-answers-and-abstention.md). So the model chooses the
source, and the answer is extracted from it without another model call:

1. The sentence: the one of the cited source that covers the question's weighted content terms best
   (geri/answering/evidence.py), plus how good its best span is; the model's own sentence on a tie. A
   sentence chooser (geri/answering/sentence_choice.py) may take the rules' second instead.
2. The span: a run of up to ``MAX_SPAN_WORDS`` words of that sentence that adds something to the question
   (not only its words, not only stop words), scored by the expected kind of answer in English questions
   (a number for "how many", a year or date for "when", capitalised words for "who"/"where"), by closeness
   to the question's words in the sentence, shortness, and not starting or ending on a stop word.

The answer text is that span with its marker; the citation keeps the whole sentence as its quote, so an
answer is always a substring of what it cites.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from wolf.v1 import geri_pb2

from geri.answering.evidence import document_language, question_terms, stop_words, terms
from geri.answering.sources import NumberedSource

_TOKEN = re.compile(r"\S+")
EDGE_PUNCTUATION = "\"'“”‘’«»()[]{}.,;:!?"
MAX_SPAN_WORDS = 8
NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred hundreds "
    "thousand thousands million millions billion billions half dozen dozens".split())
_MONTHS = frozenset("january february march april may june july august september october november "
                    "december".split())
_YEAR = re.compile(r"\b1\d{3}\b|\b20\d\d\b|\bcentur(y|ies)\b|\b\d{2,4}s\b", re.IGNORECASE)
_KINDS = (  # the first pattern that matches the question names the kind of answer it expects
    ("number", re.compile(r"\b(how (many|much|large|long|old|far|big|tall|often)|(what|which) (percentage|number|"
                          r"proportion|amount|port|population|size))\b", re.IGNORECASE)),
    ("date", re.compile(r"\b(when|what (year|century|date|decade|time)|which (year|century))\b", re.IGNORECASE)),
    ("name", re.compile(r"\b(who|whom|whose|where|what (country|city|region|state|place)|which (country|city))\b",
                        re.IGNORECASE)),
)


@dataclass(frozen=True)
class Weights:
    """How a span is scored (weights tuned on the dev split: docs/decisions/0191-short-answers-and-abstention.md)."""

    kind: float = 2.0
    question_word: float = 0.5
    distance: float = 0.3
    length: float = 0.5
    stop_edge: float = 0.7
    coverage: float = 6.0


WEIGHTS = Weights()


def expected_kind(question: str) -> str:
    """"number", "date", "name" or "" (anything)."""
    return next((kind for kind, pattern in _KINDS if pattern.search(question)), "")


def _words(span: str) -> list[str]:
    return [w.strip(EDGE_PUNCTUATION).lower() for w in span.split()]


def _fits(kind: str, span: str) -> float:
    """How well ``span`` looks like the kind of answer expected (0..1)."""
    words = _words(span)
    if kind == "number":
        return float(any(any(c.isdigit() for c in w) or w in NUMBER_WORDS for w in words))
    if kind == "date":
        return float(bool(_YEAR.search(span)) or any(w in _MONTHS for w in words))
    if kind == "name":
        return sum(1 for w in span.split() if w.strip(EDGE_PUNCTUATION)[:1].isupper()) / max(1, len(words))
    return 0.0


def trimmed(text: str, start: int, end: int) -> str:
    """``text[start:end]`` without ``EDGE_PUNCTUATION`` at either end."""
    while start < end and text[start] in EDGE_PUNCTUATION:
        start += 1
    while end > start and text[end - 1] in EDGE_PUNCTUATION:
        end -= 1
    return text[start:end]


def candidate_spans(sentence: str, question: str = "", *, max_words: int = MAX_SPAN_WORDS,
                    language: str = "en") -> list[str]:
    """Runs of up to ``max_words`` words of ``sentence`` that carry a content term the question lacks,
    shortest first, without duplicates, trimmed of punctuation at their ends; each is a substring of
    ``sentence``."""
    words = [(m.start(), m.end()) for m in _TOKEN.finditer(sentence)]
    asked = terms(question, language) if question else set()
    seen: set[str] = set()
    out: list[tuple[int, int, str]] = []
    for i in range(len(words)):
        for j in range(i, min(len(words), i + max_words)):
            span = trimmed(sentence, words[i][0], words[j][1])
            if not span or span in seen:
                continue
            said = terms(span, language)
            if not said or said <= asked:
                continue
            seen.add(span)
            out.append((j - i, i, span))
    return [span for _, _, span in sorted(out)]


def _distance(first: int, last: int, asked_at: Sequence[int]) -> int:
    """Words between the nearer end of the span ``first``..``last`` and the nearest of the sorted ``asked_at``."""
    def nearest(at: int) -> int:
        k = bisect.bisect_left(asked_at, at)
        return min(abs(asked_at[n] - at) for n in (k - 1, k) if 0 <= n < len(asked_at))
    return min(nearest(first), nearest(last))


def scored_spans(question: str, sentence: str, language: str = "en",
                 weights: Weights = WEIGHTS) -> list[tuple[str, float]]:
    """Every candidate span of ``sentence`` (:func:`candidate_spans`) with its rule score, best first
    (the shorter and earlier span first on a tie)."""
    asked = terms(question, language)
    stop = stop_words(language)
    tokens = list(_TOKEN.finditer(sentence))
    starts = [t.start() for t in tokens]
    asked_at = [i for i, t in enumerate(tokens) if terms(t.group(), language) & asked]
    kind = expected_kind(question) if language == "en" else ""
    scored: list[tuple[str, float]] = []
    for span in candidate_spans(sentence, question, language=language):
        span_words = _words(span)
        first = bisect.bisect_left(starts, sentence.find(span))  # the words begun before its first occurrence
        last = first + len(span_words) - 1
        score = -weights.question_word * len(terms(span, language) & asked) - weights.length * len(span_words)
        score -= weights.distance * (_distance(first, last, asked_at) if asked_at else 10)
        score -= weights.stop_edge * ((span_words[0] in stop) + (span_words[-1] in stop))
        if kind:
            fit = _fits(kind, span)
            score += weights.kind * fit - (1.0 if kind == "name" and not fit else 0.0)
        scored.append((span, score))
    order = sorted(range(len(scored)), key=lambda k: -scored[k][1])  # stable: candidates' order on a tie
    return [scored[k] for k in order]


def best_span(question: str, sentence: str, language: str = "en",
              weights: Weights = WEIGHTS) -> tuple[str, float]:
    """The span of ``sentence`` that most likely answers ``question`` and its score ("" when none)."""
    scored = scored_spans(question, sentence, language, weights)
    return scored[0] if scored else ("", float("-inf"))


def _ranked(question: str, sentences: Sequence[str], preferred: int, language: str,
            weights: Weights) -> list[tuple[int, list[tuple[str, float]], float]]:
    """(number, the sentence's scored spans best first, sentence score) of every sentence with a span, best
    first (see :func:`ranked_sentences`)."""
    wanted = question_terms(question, language)
    total = sum(wanted.values()) or 1.0
    ranked: list[tuple[float, bool, int, list[tuple[str, float]]]] = []
    for number, sentence in enumerate(sentences, 1):
        spans = scored_spans(question, sentence, language, weights)
        if not spans:
            continue
        found = terms(sentence, language)
        coverage = sum(w for t, w in wanted.items() if t in found) / total
        ranked.append((weights.coverage * coverage + spans[0][1], number == preferred, number, spans))
    ranked.sort(key=lambda key: (-key[0], not key[1], key[2]))
    return [(number, spans, score) for score, _, number, spans in ranked]


def ranked_sentences(question: str, sentences: Sequence[str], preferred: int, language: str = "en",
                     weights: Weights = WEIGHTS) -> list[tuple[int, str, float]]:
    """(1-based number, best span, score) of every sentence with a span, best first: question coverage of the
    sentence and its best span's score together; ``preferred``, then the earlier sentence, on a tie."""
    return [(number, spans[0][0], score) for number, spans, score in
            _ranked(question, sentences, preferred, language, weights)]


def answer_sentence(question: str, sentences: Sequence[str], preferred: int, language: str = "en",
                    weights: Weights = WEIGHTS) -> tuple[int, str]:
    """(1-based number, span) of the sentence that best states the answer and the span that answers
    (:func:`ranked_sentences`); (``preferred``, "") when no sentence has a span."""
    ranked = ranked_sentences(question, sentences, preferred, language, weights)
    return (ranked[0][0], ranked[0][1]) if ranked else (preferred, "")


SpanChooser = Callable[[str, str, Sequence[str], str], str]
"""(question, sentence, its candidate spans as the rules rank them, language) → the span of the sentence that
answers; "" to keep the rules' span."""

SentenceChooser = Callable[[str, Sequence[tuple[str, float]], str], int]
"""(question, (sentence, rules score) best first as the rules rank them, language) → the index of the sentence
the answer comes from; 0 keeps the rules' first."""


def shorten(answer: geri_pb2.GroundedAnswer, sources: Sequence[NumberedSource], question: str,
            choose_span: SpanChooser | None = None,
            choose_sentence: SentenceChooser | None = None) -> geri_pb2.GroundedAnswer:
    """``answer`` with its text made the short span of its first citation's source that answers
    ``question``; that citation now quotes the sentence holding the span. Unchanged when nothing fits.
    The rules choose the sentence unless ``choose_sentence`` (e.g. geri/answering/sentence_choice.py) picks
    another of theirs; ``choose_span`` (e.g. geri/answering/span_scoring.py), when given, the span within it."""
    if not answer.answered or not answer.citations:
        return answer
    first = answer.citations[0]
    source = next((s for s in sources if s.index == first.source_number), None)
    if source is None:
        return answer
    language = document_language(source.document)
    ranked = _ranked(question, source.sentences, first.sentence_number, language, WEIGHTS)
    if not ranked:
        return answer
    chosen = 0
    if choose_sentence is not None and len(ranked) > 1:
        chosen = choose_sentence(question, [(source.sentences[n - 1], score) for n, _, score in ranked], language)
        chosen = chosen if 0 <= chosen < len(ranked) else 0
    number, spans, _ = ranked[chosen]
    span = spans[0][0]
    if choose_span is not None:
        span = choose_span(question, source.sentences[number - 1], [s for s, _ in spans], language) or span
    shortened = geri_pb2.GroundedAnswer()
    shortened.CopyFrom(answer)
    shortened.citations[0].sentence_number = number
    shortened.citations[0].quote = source.sentences[number - 1]
    shortened.text = f"{span} [{first.marker}]"
    shortened.summary = source.sentences[number - 1]
    del shortened.key_details[:]
    return shortened
