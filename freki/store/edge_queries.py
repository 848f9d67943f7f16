"""Freki's searches as qdrant-edge query requests (``EdgeStore`` runs them)."""

from __future__ import annotations

import qdrant_edge as qe

from freki.store.base import DENSE_VECTOR, SPARSE_VECTOR, ConvexWeights, SparseVector

E = qe.Expression


def _nearest_dense(vector: list[float]) -> qe.Query:
    return qe.Query.Nearest(vector, using=DENSE_VECTOR)


def _nearest_sparse(vector: SparseVector) -> qe.Query:
    return qe.Query.Nearest(qe.SparseVector(vector.indices, vector.values), using=SPARSE_VECTOR)


def dense(vector: list[float], flt: qe.Filter | None, limit: int, with_payload: bool,
          score_threshold: float | None = None) -> qe.QueryRequest:
    """Nearest points by cosine."""
    return qe.QueryRequest(limit=limit, query=_nearest_dense(vector), filter=flt, score_threshold=score_threshold,
                           with_payload=with_payload, with_vector=False)


def sparse(vector: SparseVector, flt: qe.Filter | None, limit: int, with_payload: bool) -> qe.QueryRequest:
    """Best points by IDF-weighted sparse dot product."""
    return qe.QueryRequest(limit=limit, query=_nearest_sparse(vector), filter=flt, with_payload=with_payload,
                           with_vector=False)


def rrf(dense: list[float], sparse: SparseVector | None, flt: qe.Filter | None, limit: int, prefetch_limit: int,
        rrf_k: int, with_payload: bool) -> qe.QueryRequest:
    """Dense and sparse candidates (without a sparse query: dense alone) fused by reciprocal rank fusion."""
    prefetches = [qe.Prefetch(limit=prefetch_limit, query=_nearest_dense(dense), filter=flt)]
    if sparse is not None:
        prefetches.append(qe.Prefetch(limit=prefetch_limit, query=_nearest_sparse(sparse), filter=flt))
    return qe.QueryRequest(
        limit=limit,
        prefetches=prefetches,
        query=qe.Fusion.Rrf(k=rrf_k),  # type: ignore[arg-type]  # stub omits nested Rrf
        filter=flt,
        with_payload=with_payload,
        with_vector=False,
    )


def convex(dense_vector: list[float], sparse_vector: SparseVector, flt: qe.Filter | None, limit: int,
           prefetch_limit: int, weights: ConvexWeights, with_payload: bool) -> qe.QueryRequest:
    """Convex fusion as one query (``ConvexWeights``): the union of the dense and sparse candidates rescored by
    cosine (``$score[0]``, exact for every candidate) and the sparse candidates' scores (``$score[1]``, 0 where
    absent), combined by a formula."""
    dense_q, sparse_q = _nearest_dense(dense_vector), _nearest_sparse(sparse_vector)
    union = qe.Prefetch(limit=2 * prefetch_limit, query=dense_q, filter=flt, prefetches=[
        qe.Prefetch(limit=prefetch_limit, query=dense_q, filter=flt),
        qe.Prefetch(limit=prefetch_limit, query=sparse_q, filter=flt)])
    lexical = qe.Prefetch(limit=prefetch_limit, query=sparse_q, filter=flt)
    raw = E.Variable("$score[0]")
    if (weights.cosine_scale, weights.cosine_shift) != (1.0, 0.0):
        raw = E.Sum([E.Mult([E.Constant(weights.cosine_scale), raw]), E.Constant(weights.cosine_shift)])
    cosine, bm25 = E.Max([E.Constant(0.0), raw]), E.Variable("$score[1]")
    formula = E.Sum([
        E.Mult([E.Constant(1.0 - weights.sparse_weight), cosine]),
        E.Mult([E.Constant(weights.sparse_weight),
                E.Div(bm25, E.Sum([bm25, E.Constant(weights.sparse_half)]), by_zero_default=0.0)]),
    ])
    return qe.QueryRequest(limit=limit, prefetches=[union, lexical], query=qe.Formula(formula, {"$score[1]": 0.0}),
                           filter=flt, with_payload=with_payload, with_vector=False)
