"""Putting the cosines of several embedding models on one scale before they are compared.

Models differ in where unrelated texts land: the packaged MiniLM gives two unrelated sentences a cosine of
~0.03, a two-layer cut of it ~0.63 (its vectors crowd into a cone). Merging their search results by raw
cosine ranks the second model's chunks first whatever they say. So each model's *background* — the mean
cosine between unrelated sentences (``CALIBRATION_TEXTS``) — is measured once at start, and a model's
cosines are mapped linearly onto the standard model's scale with two fixed points: its background goes to
the standard model's background, and 1 (the same text) stays 1:
``ref.mean + (cos - own.mean) * (1 - ref.mean) / (1 - own.mean)``, kept in [-1, 1]. The standard model's
cosines stay unchanged, so with one model nothing moves — unless the standard model's own background is far
from ``REFERENCE``, the scale Freki's score thresholds and Odin's answer gate were set on (the packaged
MiniLM's): then the standard model, and every other model with it, is mapped onto ``REFERENCE``
(``reference_for``). multilingual-e5-small, for one, puts unrelated texts at cosine ~0.76, where every
threshold would read "relevant" (docs/decisions/0142-multilingual-e5.md). Such a standard model is mapped
by two anchors of its own (``anchored``): unrelated texts, and a question with the sentence that answers it
(``CALIBRATION_QUESTIONS``), each onto the reference's, so a relevant passage scores where MiniLM would put
it and the answer gate holds for that model too (docs/decisions/0161-answer-gate-languages.md).

Measured (``scripts/bench/embedding_models.py``, SciFact sample of 400 abstracts, 100 test claims, half the
abstracts on a second model), dense / hybrid nDCG@10: with a two-layer cut of MiniLM projected to 128-d
(background 0.63) 0.229 / 0.590 merged by raw cosine, 0.468 / 0.600 aligned (the cut alone 0.166 / 0.667);
with all six layers projected to 128-d 0.822 / 0.874 aligned (MiniLM alone 0.851 / 0.893, the projection
alone 0.781 / 0.852: the merge lands between the two models). Matching the spread too (z-scores, ``ref.mean +
(cos - own.mean) * ref.sd / own.sd``) did worse: 0.445 / 0.532 with the cut, 0.730 / 0.825 with the
projection — it shrank the projection's cosines, whose unrelated pairs spread wider (sd 0.115 vs 0.074).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# Unrelated topics, plain sentences of everyday length; 20 texts give 380 pairs.
CALIBRATION_TEXTS = (
    "The recipe calls for two cups of flour and a pinch of salt.",
    "Quarterly revenue rose eight percent on strong cloud sales.",
    "The goalkeeper saved a penalty in the last minute of the match.",
    "Mitochondria produce most of the cell's supply of ATP.",
    "The train to Hamburg leaves from platform seven at noon.",
    "Install the package with pip and restart the server.",
    "The committee postponed the vote on the new zoning law.",
    "Volcanic ash grounded flights across northern Europe.",
    "She painted the fence blue before the guests arrived.",
    "The patient was prescribed antibiotics for ten days.",
    "A binary search halves the interval at every step.",
    "The orchestra rehearsed Beethoven's ninth symphony.",
    "Interest rates were left unchanged by the central bank.",
    "Wolves hunt in packs and communicate by howling.",
    "The contract ends on the last day of the month.",
    "Photosynthesis converts light energy into chemical energy.",
    "The museum reopened after a two-year renovation.",
    "Use a torque wrench to tighten the wheel nuts.",
    "The novel follows three generations of a fishing family.",
    "Heavy rain is expected along the coast tomorrow.",
)

# A question for each of CALIBRATION_TEXTS that the text answers: where a model puts a *relevant* match.
CALIBRATION_QUESTIONS = (
    "How much flour does the recipe need?",
    "Why did quarterly revenue grow?",
    "Who saved the penalty at the end of the match?",
    "What produces most of a cell's ATP?",
    "When does the train to Hamburg leave?",
    "How do I install the package?",
    "What happened to the vote on the zoning law?",
    "Why were flights grounded in northern Europe?",
    "What colour did she paint the fence?",
    "How long must the patient take antibiotics?",
    "How does binary search narrow the interval?",
    "Which symphony did the orchestra rehearse?",
    "Did the central bank change interest rates?",
    "How do wolves communicate?",
    "When does the contract end?",
    "What does photosynthesis convert light into?",
    "When did the museum reopen?",
    "What tool should I use on the wheel nuts?",
    "What is the novel about?",
    "What weather is expected on the coast?",
)


@dataclass(frozen=True)
class CosineBackground:
    """Mean and standard deviation of a model's cosines between unrelated texts (the spread is logged), and the
    mean cosine of a question to the sentence that answers it (``related``; 0 when not measured)."""

    mean: float
    sd: float
    related: float = 0.0

    @classmethod
    def of(cls, embed: Callable[[Sequence[str]], np.ndarray],
           embed_query: Callable[[str], np.ndarray] | None = None) -> CosineBackground:
        """Measure it with ``embed`` (L2-normalised vectors) on ``CALIBRATION_TEXTS``; with ``embed_query``, the
        questions are embedded as queries (asymmetric models embed the two sides differently)."""
        vectors = np.asarray(embed(list(CALIBRATION_TEXTS)), dtype=np.float64)
        cosines = vectors @ vectors.T
        pairs = cosines[~np.eye(len(vectors), dtype=bool)]
        questions = (np.asarray([embed_query(q) for q in CALIBRATION_QUESTIONS], dtype=np.float64)
                     if embed_query is not None else np.asarray(embed(list(CALIBRATION_QUESTIONS)), dtype=np.float64))
        related = float(np.mean(np.sum(questions * vectors, axis=1)))
        return cls(float(pairs.mean()), max(float(pairs.std()), 1e-6), related)


# The scale of the thresholds: the packaged all-MiniLM-L6-v2's background on CALIBRATION_TEXTS
# (docs/embedding-models.md, "Retrieval").
REFERENCE = CosineBackground(mean=0.026, sd=0.074, related=0.722)
# A standard model whose background is this close to REFERENCE keeps its own scale (the thresholds hold).
REFERENCE_TOLERANCE = 0.1


# A model whose related and unrelated cosines lie closer than this has no usable second anchor.
MIN_ANCHOR_GAP = 0.05


def reference_for(standard: CosineBackground) -> CosineBackground:
    """The scale every model's cosines are put on: the standard model's own when near ``REFERENCE``, else it."""
    return standard if abs(standard.mean - REFERENCE.mean) <= REFERENCE_TOLERANCE else REFERENCE


@dataclass(frozen=True)
class Alignment:
    """``cosine -> scale * cosine + shift``, kept in [-1, 1]; linear so that the store's in-engine fusion
    formula can apply it too (``freki.store.ConvexWeights``). The default is the identity."""

    scale: float = 1.0
    shift: float = 0.0

    def __call__(self, cosine: float) -> float:
        return min(1.0, max(-1.0, self.scale * cosine + self.shift))


def aligner(own: CosineBackground, reference: CosineBackground) -> Alignment:
    """Maps a cosine of the model with background ``own`` onto the scale of ``reference``."""
    if own == reference:
        return Alignment()
    scale = (1.0 - reference.mean) / max(1.0 - own.mean, 1e-6)
    return Alignment(scale, reference.mean - own.mean * scale)


def anchored(own: CosineBackground, reference: CosineBackground) -> Alignment:
    """Maps a standard model's cosines onto ``reference`` by two anchors: unrelated texts (``mean``) and a
    question with its answer (``related``). A model far from the reference (multilingual-e5: unrelated 0.78,
    related 0.88) then scores a relevant passage where MiniLM would, so the score thresholds and Odin's answer
    gate mean the same for it; without a usable second anchor, ``aligner``'s one-anchor map."""
    gap = own.related - own.mean
    if own == reference or gap < MIN_ANCHOR_GAP or reference.related - reference.mean < MIN_ANCHOR_GAP:
        return aligner(own, reference)
    scale = (reference.related - reference.mean) / gap
    return Alignment(scale, reference.mean - own.mean * scale)
