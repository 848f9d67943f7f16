"""Turn the model's JSON answer into a grounded answer, or an honest "the sources do not say".

Rules, in order (each abstention says which rule and why):

1. The model says the sources do not contain the answer (``answered: false``): abstain.
2. The model answers but cites no sentence: abstain.
3. The answer's content words are mostly absent from the sentences it cites (``min_support``): the
   model's wording is not carried by its evidence, so the answer becomes the cited sentences themselves
   (``extractive``) — never text the sources do not support. A small model picks the right sentence far
   more reliably than it paraphrases it.

Citations are resolved to the quoted sentence and its document (id, chunk, title, score, location). The
confidence is the model's own estimate, never above the relevance score of its best cited source.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from wolf.v1 import geri_pb2

from geri.answering.sentence_choice import likeliest_sentence
from geri.answering.sources import NumberedSource
from geri.answering.span_scoring import model_span
from geri.answering.spans import SentenceChooser, SpanChooser, shorten
from geri.backends.base import ContinuationScorer

_WORD = re.compile(r"[\w']+", re.UNICODE)
_MARKER = re.compile(r"\[\d+\]")
_NUMBERED_MARKER = re.compile(r"(\s*)\[(\d{1,9})\]")
STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being it its this that these "
    "those there their they he she his her him we you i our your not no yes do does did has have had will would "
    "can could should may might must shall which who whom whose what when where why how than then so such into "
    "over under about after before between during also only very more most some any all each other".split()
)


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without stopwords or citation markers."""
    return {w for w in (m.lower() for m in _WORD.findall(_MARKER.sub(" ", text))) if w not in STOPWORDS}


def support(answer: str, quotes: Sequence[str]) -> float:
    """Share of the answer's content words that appear in the quoted sentences (1.0 for none to check)."""
    words = content_words(answer)
    if not words:
        return 1.0
    quoted = set().union(*(content_words(q) for q in quotes)) if quotes else set()
    return len(words & quoted) / len(words)


def abstention(reason: str) -> geri_pb2.GroundedAnswer:
    """A grounded answer that says the sources do not carry the answer, and why."""
    return geri_pb2.GroundedAnswer(answered=False, reason=reason)


def _citation(marker: int, source: NumberedSource, sentence: int) -> geri_pb2.Citation:
    doc = source.document
    citation = geri_pb2.Citation(
        marker=marker, document_id=doc.document_id, chunk_id=doc.chunk_id, chunk_index=doc.chunk_index,
        title=doc.source or doc.document_id, score=doc.relevance_score, quote=source.sentences[sentence - 1],
        source_number=source.index, sentence_number=sentence)
    citation.location.CopyFrom(doc.location)
    return citation


def _renumber(text: str, renumbered: dict[int, int]) -> str:
    """``text`` with each ``[n]`` pointing at the kept citation the model's n-th became; a marker of a dropped
    citation (or of none: the model may write any number) goes, so no marker points at nothing."""
    def marker(match: re.Match[str]) -> str:
        kept = renumbered.get(int(match.group(2)))
        return f"{match.group(1)}[{kept}]" if kept else ""
    return _NUMBERED_MARKER.sub(marker, text).strip()


def ground(payload: dict[str, Any], sources: Sequence[NumberedSource], *, min_support: float,
           question: str = "", short_answers: bool = False, scorer: ContinuationScorer | None = None,
           sentence_scorer: ContinuationScorer | None = None,
           cancel: threading.Event | None = None) -> geri_pb2.GroundedAnswer:
    """Apply the rules above to the model's validated answer JSON for ``sources``; with ``short_answers``
    (and the ``question``), the answer text becomes the phrase of the cited source that answers
    (geri/answering/spans.py): its sentence among the rules' best by ``sentence_scorer``'s model when one is
    given (geri/answering/sentence_choice.py), the span within it among the rules' best by ``scorer``'s
    (geri/answering/span_scoring.py).

    A citation of a source not in ``sources`` (e.g. one dropped to fit the window) is left out.
    """
    if not payload.get("answered"):
        said = str(payload.get("reason") or "").strip()
        return abstention(f"the model says the sources do not contain the answer{': ' + said if said else ''}")
    by_index = {s.index: s for s in sources}
    citations: list[geri_pb2.Citation] = []
    seen: dict[tuple[int, int], int] = {}  # (source, sentence) -> its marker
    renumbered: dict[int, int] = {}  # the model's marker (its citation's position, from 1) -> the kept one
    for position, item in enumerate(payload.get("citations") or [], 1):
        source = by_index.get(int(item.get("source", 0)))
        sentence = int(item.get("sentence", 0))
        if source is None or not 1 <= sentence <= len(source.sentences):
            continue  # not shown to the model, or (hand-made payloads only) not a real sentence
        if (source.index, sentence) not in seen:
            seen[(source.index, sentence)] = len(citations) + 1
            citations.append(_citation(len(citations) + 1, source, sentence))
        renumbered[position] = seen[(source.index, sentence)]
    text = str(payload.get("answer") or "").strip()
    if not citations:
        return abstention("the answer cites no sentence of the sources")
    extractive = support(text, [c.quote for c in citations]) < min_support
    if extractive:
        text = " ".join(f"{c.quote} [{c.marker}]" for c in citations)
    else:
        text = _renumber(text, renumbered)
        if not _MARKER.search(text):
            text = f"{text} " + "".join(f"[{c.marker}]" for c in citations)
    confidence = min(float(payload.get("confidence", 0.0)), max(c.score for c in citations))
    details = [str(d) for d in payload.get("key_details") or [] if str(d).strip()]
    summary = str(payload.get("summary") or "").strip()
    if extractive:  # the model's own summary and details are as unsupported as its answer
        summary, details = citations[0].quote, []
    grounded = geri_pb2.GroundedAnswer(answered=True, text=text, summary=summary, key_details=details,
                                       confidence=round(max(0.0, confidence), 4), citations=citations,
                                       extractive=extractive)
    if not short_answers or not question:
        return grounded
    choose_span: SpanChooser | None = None if scorer is None else (
        lambda asked, sentence, spans, language: model_span(asked, sentence, scorer, language, ranked_spans=spans,
                                                            cancel=cancel))
    choose_sentence: SentenceChooser | None = None if sentence_scorer is None else (
        lambda asked, ranked, language: likeliest_sentence(asked, ranked, sentence_scorer, language, cancel))
    return shorten(grounded, sources, question, choose_span, choose_sentence)
