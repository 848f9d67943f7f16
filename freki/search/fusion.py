"""Score calibration and fusion of ranked lists, all on a common relevance scale in [0, 1].

Why two fusion methods:

* **RRF** (reciprocal rank fusion, ``sum w_i / (k + rank_i)``) needs no calibration, which is why
  Qdrant implements it server-side (prefetch + ``Fusion.RRF``). But it only sees ranks: when one
  retriever is weak for a query (a question phrased in other words than the passage gives BM25
  nothing useful to match), its arbitrary top ranks still pull noise into the fused top-10.
* **Convex** fusion adds *calibrated* scores: ``(1 - w) * dense_relevance + w * lexical_relevance``.
  Lexical relevance is an absolute transform of the BM25 score (``s / (s + half * n)``), not a per-query
  min-max rescale, so a query whose terms barely match anything contributes little lexical
  evidence, while an exact match on a rare term (an error code, a part number) contributes a lot.
  That is what makes hybrid search safe to use as a default on collections where one of the two
  retrievers is weak.

Relevance scores (what ``RetrievedDocument.relevance_score`` means, per mode):

* dense: cosine similarity of query and chunk embeddings, clipped to [0, 1].
* sparse: ``s / (s + half * n)`` for BM25 score ``s`` of a query with ``n`` distinct terms; 0.5 means
  the passage earns ``half`` (default 8) BM25 points per query term — every term matched, and rare
  (IDF ~ 8 is about one passage in 3,000). Dividing by ``n`` makes long and short queries comparable.
* hybrid/convex: the weighted mean of the two above (a chunk the lexical search did not return
  gets lexical relevance 0; one the dense search did not return gets its exact cosine).
* hybrid/rrf: the RRF score divided by its maximum (ranked first by every retriever) — a measure
  of rank agreement, so thresholds mean "how consistently near the top", not absolute relevance.
* multiple query variants: the mean of the per-variant relevance (0 where a variant missed it);
  for RRF, RRF over the variants' lists.
* re-ranked: the cross-encoder's probability (sigmoid of its logit).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Scored:
    """A candidate id with a score on any scale; lists are ordered best first."""

    id: str
    score: float


def dense_relevance(cosine: float) -> float:
    """Cosine similarity as relevance: negative similarity means unrelated, so it clips to 0."""
    return min(1.0, max(0.0, cosine))


def sparse_relevance(bm25: float, half: float) -> float:
    """A BM25 score squashed into [0, 1): ``half`` maps to 0.5; monotone, so ranks are unchanged."""
    if bm25 <= 0.0:
        return 0.0
    return bm25 / (bm25 + half)


def bm25_from_relevance(relevance: float, half: float) -> float:
    """Inverse of :func:`sparse_relevance` (used by evaluation tooling to recover raw scores)."""
    relevance = min(max(relevance, 0.0), 1.0 - 1e-9)
    return half * relevance / (1.0 - relevance)


def rrf(lists: Sequence[Sequence[str]], k: int = 60, weights: Sequence[float] | None = None) -> list[Scored]:
    """Reciprocal rank fusion of ranked id lists, normalised so that first in every list scores 1.

    Args:
        lists: Ranked ids per retriever (best first); ranks start at 1.
        k: Rank constant; larger flattens the difference between top and lower ranks.
        weights: Per-list weights (default 1 each).
    """
    if weights is None:
        weights = [1.0] * len(lists)
    if len(weights) != len(lists):
        raise ValueError(f"rrf needs one weight per list (got {len(weights)} weights for {len(lists)} lists)")
    if k < 1:
        raise ValueError(f"rrf rank constant k must be >= 1 (got {k})")
    best = sum(w / (k + 1) for w in weights)
    if best <= 0:
        return []
    sums: dict[str, float] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for rank, item in enumerate(ranked, start=1):
            sums[item] = sums.get(item, 0.0) + weight / (k + rank)
    return sort_scored(Scored(i, s / best) for i, s in sums.items())


def rrf_relevance(raw_rrf: float, lists: int, k: int = 60) -> float:
    """A raw (unweighted) RRF sum from the store as relevance in [0, 1]."""
    return min(1.0, raw_rrf * (k + 1) / max(1, lists))


def convex(
    dense: Mapping[str, float], sparse: Mapping[str, float], sparse_weight: float
) -> list[Scored]:
    """``(1 - w) * dense + w * sparse`` over the union of candidates (relevances in [0, 1]).

    The definition: queries run the same sum inside the store (``VectorStore.search_convex``, one engine
    call); tuning tools and tests fuse candidate lists with this function.

    A candidate missing from one mapping scores 0 there: callers pass the exact dense relevance
    of every candidate (it is cheap to compute), and lexical relevance is 0 for a chunk that
    shares no query term, or small for one below the lexical candidate cut-off.
    """
    if not 0.0 <= sparse_weight <= 1.0:
        raise ValueError(f"sparse_weight must be in [0, 1] (got {sparse_weight})")
    ids = dict.fromkeys([*dense, *sparse])
    return sort_scored(
        Scored(i, (1.0 - sparse_weight) * dense.get(i, 0.0) + sparse_weight * sparse.get(i, 0.0)) for i in ids
    )


def mean_relevance(lists: Sequence[Sequence[Scored]]) -> list[Scored]:
    """Fuse result lists of several query variants: mean relevance, 0 where a variant missed."""
    if not lists:
        return []
    sums: dict[str, float] = {}
    for ranked in lists:
        for item in ranked:
            sums[item.id] = sums.get(item.id, 0.0) + item.score
    return sort_scored(Scored(i, s / len(lists)) for i, s in sums.items())


def sort_scored(items: Iterable[Scored]) -> list[Scored]:
    """Best first; ties broken by id so results are deterministic across runs and engines."""
    return sorted(items, key=lambda s: (-s.score, s.id))
