"""Does the retrieved context address the question? Evidence for the abstention decision.

A retrieval score alone does not hold as the corpus grows: with more documents, some unrelated passage
scores high for any question, and a threshold tuned at one corpus size abstains less at another. What
stays put is whether the passage *says* the things the question asks about: the share of the question's
content terms (its language's stop words removed, Snowball stems, so "ceded" meets "cede") that the best
passage contains, each term weighted by how rare it is in general text of the language (wordfreq): a
question about a battle no document covers finds passages about other battles, which share its common
words ("British", "lose") but not its names ("Quebec", "1760").

:func:`assess` measures this on the best passage (the one an answer stands on); :class:`Gate` decides
with a score floor (nothing relevant at all) and a floor on score and coverage together (the passage is about
something else). The best passage is the one the model is shown first: after Geri's source rerank
(geri/answering/source_rerank.py) when it runs, which puts first the source the model finds the question
likeliest after (decision 0410); :func:`may_pass_after_rerank` tells whether that is worth running.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import Stemmer
from stop_words import StopWordError, get_stop_words
from wolf.v1 import common_pb2
from wordfreq import available_languages, zipf_frequency

from geri.settings import AnsweringSettings
from wolf_service.language_tags import normalize_language

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")
# Words that ask rather than say: they are in no passage that answers, so they must not count as missing.
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how much many long often kind type name named called "
    "was wer wie wo wann warum welche welcher welches wieviel wieviele viel viele hoch gross groß lange "
    "gibt darf dürfen kann können muss müssen soll".split())
# ISO 639-1 -> PyStemmer's Snowball algorithm for the languages whose chunks Freki marks.
_SNOWBALL = {"en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
             "nl": "dutch", "pt": "portuguese", "sv": "swedish", "da": "danish", "no": "norwegian",
             "fi": "finnish", "ru": "russian", "pl": "polish", "tr": "turkish", "hu": "hungarian",
             "ro": "romanian", "cs": "czech", "el": "greek"}
_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})
_local = threading.local()  # a PyStemmer object must not be shared between threads


@lru_cache(maxsize=32)
def stop_words(language: str) -> frozenset[str]:
    """Stop words of ``language`` (the stop-words package; none for a language it lacks) and question words."""
    try:
        words = frozenset(w.lower() for w in get_stop_words(language or "en"))
    except StopWordError:
        words = frozenset()
    return words | {w.translate(_FOLD) for w in words} | _QUESTION_WORDS


def _stem(word: str, language: str) -> str:
    algorithm = _SNOWBALL.get(language)
    if algorithm is None or len(word) <= 3 or not word.isalpha():
        return word
    stemmers: dict[str, Stemmer.Stemmer] = getattr(_local, "stemmers", None) or {}
    _local.stemmers = stemmers
    stemmer = stemmers.get(algorithm) or stemmers.setdefault(algorithm, Stemmer.Stemmer(algorithm))
    return str(stemmer.stemWord(word)).translate(_FOLD)


@lru_cache(maxsize=1)
def _wordfreq_languages() -> frozenset[str]:
    return frozenset(available_languages())


def _weight(word: str, language: str) -> float:
    """How much a word says about what a question is about: its information in general text of its
    language (8 - Zipf frequency: "tanaghrisson" 8, "require" 3.2), at least 1; 1 for every word of a
    language without a frequency list."""
    if language not in _wordfreq_languages():
        return 1.0
    return max(1.0, 8.0 - zipf_frequency(word, language))


def question_terms(question: str, language: str = "en") -> dict[str, float]:
    """Content terms of a question, stem -> weight (:func:`_weight` of its rarest word form)."""
    stop = stop_words(language)
    out: dict[str, float] = {}
    for match in _WORD.finditer(question.lower()):
        word = match.group()
        if word in stop or (len(word) < 2 and not word.isdigit()):
            continue
        stem = _stem(word, language)
        out[stem] = max(out.get(stem, 0.0), _weight(word, language))
    return out


def terms(text: str, language: str = "en") -> set[str]:
    """Content terms of ``text``: lower-cased words without stop words, stemmed for ``language``."""
    stop = stop_words(language)
    return {_stem(w, language) for w in (m.group() for m in _WORD.finditer(text.lower()))
            if w not in stop and (len(w) > 1 or w.isdigit())}


def sentences(text: str) -> list[str]:
    """``text`` split into sentences (roughly; only used to find the best-covering one)."""
    return [s for s in (" ".join(p.split()) for p in _SENTENCE_END.split(text)) if s]


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as the gate sees it."""

    content: str
    score: float
    language: str = "en"


def document_language(document: common_pb2.RetrievedDocument) -> str:
    """The ISO 639-1 code of a retrieved chunk's language tag as Freki's analyzers read it ("en-US", "EN" and
    "eng" are "en"), "en" when it has none: a parser keeps the tag its format declares (e.g. HTML's ``lang``),
    and every rule here that depends on the language asks for the language itself."""
    return normalize_language(document.metadata.get("language", "")) or "en"


def passages(documents: Sequence[common_pb2.RetrievedDocument]) -> list[Passage]:
    """The gate's view of retrieved chunks: content, relevance and the language Freki analyzed them in."""
    return [Passage(d.content, d.relevance_score, document_language(d)) for d in documents]


@dataclass(frozen=True)
class Evidence:
    """How well the best passage addresses the question.

    ``coverage``: the weighted share of the question's content terms the best passage contains;
    ``sentence_coverage``: the same for its best sentence; ``margin``: best score minus the second best.
    """

    score: float
    margin: float
    coverage: float
    sentence_coverage: float
    question_terms: int
    missing: tuple[str, ...] = ()


def assess(question: str, passages: Sequence[Passage]) -> Evidence:
    """Evidence that ``passages`` (best first) address ``question``; coverage is measured on the best one,
    the passage an answer stands on."""
    if not passages:
        return Evidence(0.0, 0.0, 0.0, 0.0, 0)
    best = passages[0]
    language = best.language or "en"
    wanted = question_terms(question, language)
    scores = sorted((p.score for p in passages), reverse=True)
    margin = scores[0] - scores[1] if len(scores) > 1 else scores[0]
    if not wanted:  # nothing to check ("what is it?"): the retrieval score alone decides
        return Evidence(scores[0], margin, 1.0, 1.0, 0)
    total = sum(wanted.values())

    def covered(text: str) -> tuple[float, set[str]]:
        found = terms(text, language) & wanted.keys()
        return sum(w for t, w in wanted.items() if t in found) / total, found

    coverage, found = covered(best.content)
    sentence_coverage = max((covered(s)[0] for s in sentences(best.content)), default=0.0)
    return Evidence(scores[0], margin, coverage, sentence_coverage, len(wanted),
                    tuple(sorted(wanted.keys() - found)))


@dataclass(frozen=True)
class Gate:
    """Answer only when the best passage is relevant at all (``min_score``) and the evidence that it says
    what the question asks, ``score + coverage_weight * coverage``, reaches ``min_evidence``: a passage
    that scores high can answer in other words than the question's, one that scores low must name what
    the question asks about."""

    min_score: float
    min_evidence: float = 0.0
    coverage_weight: float = 0.6
    # The setting min_evidence comes from, named in the reason: an operator must know which one to change.
    setting: str = "min_evidence"

    def decide(self, evidence: Evidence) -> tuple[bool, str]:
        """(answer?, why not) for ``evidence``."""
        if evidence.score < self.min_score:
            return False, (f"no source is relevant enough: the best scored {evidence.score:.3f}, below "
                           f"answer_min_score {self.min_score:.3f}")
        combined = evidence.score + self.coverage_weight * evidence.coverage
        if combined < self.min_evidence:
            missing = f"; missing: {', '.join(evidence.missing[:5])}" if evidence.missing else ""
            return False, (f"the best source does not say what the question asks: it scored {evidence.score:.3f} "
                           f"and holds {evidence.coverage:.0%} of the question's terms, together {combined:.3f}, "
                           f"below {self.setting} {self.min_evidence:.3f}{missing}")
        return True, ""


def evidence_reason(question: str, documents: Sequence[common_pb2.RetrievedDocument], *, min_score: float,
                    settings: AnsweringSettings, reranked: bool = False) -> str:
    """Why the answer to ``question`` must abstain over the retrieved ``documents`` (best first, before any
    cut by score), or "" when it may answer: :class:`Gate` with ``min_score``, the settings' coverage weight
    and evidence floor (``reranked_min_evidence`` when the source rerank chose the first document)."""
    gate = Gate(min_score, settings.reranked_min_evidence, settings.coverage_weight, "reranked_min_evidence") \
        if reranked else Gate(min_score, settings.min_evidence, settings.coverage_weight)
    return gate.decide(assess(question, passages(documents)))[1]


def may_pass_after_rerank(question: str, documents: Sequence[common_pb2.RetrievedDocument], *, min_score: float,
                          settings: AnsweringSettings, margin: float) -> bool:
    """Would :func:`evidence_reason` let ``question`` be answered if the source rerank, which moves first only
    documents within ``margin`` of the best score, put one of ``documents`` (best first) first? When not, no
    rerank can change the abstention and it need not run; when so, the gate decides on the rerank's order."""
    gate = Gate(min_score, settings.reranked_min_evidence, settings.coverage_weight)
    found = passages(documents)
    near = [p for p in found if p.score >= found[0].score - margin]
    return any(gate.decide(assess(question, [p, *(q for q in found if q is not p)]))[0] for p in near)
