"""Turn Geri's JSON answer into a grounded answer, or an honest "the sources do not say".

Rules, in order (each abstention says which rule and why):

1. The model says the sources do not contain the answer (``answered: false``): abstain.
2. The model answers but cites no sentence: abstain.
3. The answer's content words are mostly absent from the sentences it cites (``min_support``): the
   model's wording is not carried by its evidence, so the answer becomes the cited sentences themselves
   (``extractive``) — never text the sources do not support. A small model picks the right sentence far
   more reliably than it paraphrases it.

Citations are resolved to the quoted sentence and its source (document, chunk, title, score). The
confidence is the model's own estimate, never above the relevance score of its best cited source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odin_client.answering.sources import NumberedSource
from odin_client.results import Citation

_WORD = re.compile(r"[\w']+", re.UNICODE)
_MARKER = re.compile(r"\[\d+\]")
STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being it its this that these "
    "those there their they he she his her him we you i our your not no yes do does did has have had will would "
    "can could should may might must shall which who whom whose what when where why how than then so such into "
    "over under about after before between during also only very more most some any all each other".split()
)


@dataclass(frozen=True)
class Verdict:
    """What Odin concludes from one structured answer."""

    answered: bool
    reason: str
    text: str
    summary: str
    key_details: list[str]
    citations: list[Citation]
    confidence: float
    extractive: bool = False


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


def _abstain(reason: str) -> Verdict:
    return Verdict(False, reason, "", "", [], [], 0.0)


def ground(payload: dict[str, Any], sources: Sequence[NumberedSource], *, min_support: float) -> Verdict:
    """Apply the rules above to Geri's validated answer JSON for ``sources``."""
    if not payload.get("answered"):
        said = str(payload.get("reason") or "").strip()
        return _abstain(f"the model says the sources do not contain the answer{': ' + said if said else ''}")
    by_index = {s.index: s for s in sources}
    citations: list[Citation] = []
    seen: set[tuple[int, int]] = set()
    for item in payload.get("citations") or []:
        source = by_index.get(int(item.get("source", 0)))
        sentence = int(item.get("sentence", 0))
        if source is None or not 1 <= sentence <= len(source.sentences) or (source.index, sentence) in seen:
            continue  # cannot happen with a schema-constrained reply; a hand-made payload is checked anyway
        seen.add((source.index, sentence))
        src = source.source
        citations.append(Citation(marker=len(citations) + 1, document_id=src.document_id, chunk_id=src.chunk_id,
                                  chunk_index=src.chunk_index, title=src.source or src.document_id, score=src.score,
                                  quote=source.sentences[sentence - 1], location=src.location))
    text = str(payload.get("answer") or "").strip()
    if not citations:
        return _abstain("the answer cites no sentence of the sources")
    extractive = support(text, [c.quote for c in citations]) < min_support
    if extractive:
        text = " ".join(f"{c.quote} [{c.marker}]" for c in citations)
    elif not _MARKER.search(text):
        text = f"{text} " + "".join(f"[{c.marker}]" for c in citations)
    confidence = min(float(payload.get("confidence", 0.0)), max(c.score for c in citations))
    details = [str(d) for d in payload.get("key_details") or [] if str(d).strip()]
    summary = str(payload.get("summary") or "").strip()
    if extractive:  # the model's own summary and details are as unsupported as its answer
        summary, details = citations[0].quote, []
    return Verdict(True, "", text, summary, details, citations, round(max(0.0, confidence), 4), extractive)
