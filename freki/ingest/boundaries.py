"""How similar each sentence is to the few before it: the topic-shift signal that places semantic boundaries.

Two signals, chosen by ``chunking.boundary_signal``:

* ``lexical`` (default): TextTiling's block measure (Hearst, 1997). Each sentence becomes a bag of the
  English terms of the sparse index (lower-cased, stop words dropped, Porter-stemmed; other languages keep
  their surface forms, whose overlap still follows the topic); the similarity at a gap
  is the cosine between the summed terms of the ``CONTEXT_SENTENCES`` before it and of as many after it.
  Costs a tokenizer pass, no model, for the same retrieval quality as the embedding signal (docs/retrieval.md,
  "Chunking boundaries", has the comparison).
* ``embedding``: the cosine between the next sentence's embedding and the sum of the
  ``CONTEXT_SENTENCES`` before it (the model embeds every sentence of a section that needs splitting,
  once more than its chunks). Catches topic shifts that change words
  without repeating them, at roughly double the indexing cost.

Either way only local evidence enters a gap's score, so an edit moves only nearby boundaries
(``freki.ingest.chunking``). Scores are rounded to 3 decimals so float noise cannot flip a comparison.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from freki.embed.sparse import tokenize
from freki.ingest.deadline import checked
from freki.ingest.segmenting import SectionPlan

# Sentences on each side of a gap that its score looks at; small keeps the score local.
CONTEXT_SENTENCES = 3
# Units between two checks of the request's deadline in a long loop: ~10 ms of work each.
CHECK_EVERY = 1024


def score_gaps(plans: Sequence[SectionPlan], signal: str,
               embed: Callable[[list[str]], np.ndarray], threshold: float,
               check: Callable[[str], None] = lambda _: None) -> None:
    """Set ``plan.similarity`` of every plan: one value per unit, the first 1.0 (no gap before it).

    ``threshold`` is the neutral value for a gap the signal cannot judge (neither joins nor splits).
    ``check(stage)`` raises when the work must stop (the request's deadline); it runs every ``CHECK_EVERY``
    gaps (``embed`` checks on its own between batches).
    """
    if not plans:
        return
    if signal == "embedding":
        _embedding_similarities(plans, embed)
    else:
        _lexical_similarities(plans, threshold, check)


def _embedding_similarities(plans: Sequence[SectionPlan], embed: Callable[[list[str]], np.ndarray]) -> None:
    texts = sorted({u.text for plan in plans for u in plan.units})
    vectors = np.asarray(embed(texts), dtype=np.float32)
    row = {text: vectors[i] for i, text in enumerate(texts)}
    for plan in plans:
        matrix = np.stack([row[u.text] for u in plan.units])
        sims = [1.0]
        for gap in range(1, len(plan.units)):
            context = matrix[max(0, gap - CONTEXT_SENTENCES) : gap].sum(axis=0)
            norm = float(np.linalg.norm(context)) or 1.0
            sims.append(round(float(matrix[gap] @ context) / norm, 3))
        plan.similarity = sims


def _lexical_similarities(plans: Sequence[SectionPlan], neutral: float, check: Callable[[str], None]) -> None:
    for plan in plans:
        bags = [Counter(tokenize(u.text)) for u in checked(plan.units, check, "scoring sentence gaps", CHECK_EVERY)]
        sims = [1.0]
        for gap in range(1, len(bags)):
            if not gap % CHECK_EVERY:
                check("scoring sentence gaps")
            # Blocks on both sides, as TextTiling does: comparing only the next sentence ties the true boundary
            # with the gap after it whenever that sentence shares no word with the old topic either.
            before = _block(bags[max(0, gap - CONTEXT_SENTENCES) : gap])
            after = _block(bags[gap : gap + CONTEXT_SENTENCES])
            # A block without terms (numbers, dashes) says nothing about topic.
            sims.append(round(_cosine(before, after), 3) if before and after else neutral)
        plan.similarity = sims


def _block(bags: Sequence[Counter[str]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for bag in bags:
        total.update(bag)
    return total


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    """Cosine of two non-empty term bags."""
    if len(a) > len(b):
        a, b = b, a
    dot = sum(count * b[term] for term, count in a.items() if term in b)
    return dot / math.sqrt(sum(c * c for c in a.values()) * sum(c * c for c in b.values()))
