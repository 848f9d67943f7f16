"""Freki's searches as qdrant-client query requests (``RemoteStore`` sends them, as one batch per call)."""

from __future__ import annotations

from qdrant_client import models

from freki.store.base import DENSE_VECTOR, SPARSE_VECTOR, ConvexWeights, SparseVector


def _sparse(vector: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=vector.indices, values=vector.values)


def dense(vector: list[float], flt: models.Filter | None, limit: int, with_payload: bool,
          score_threshold: float | None = None) -> models.QueryRequest:
    """Nearest points by cosine."""
    return models.QueryRequest(query=vector, using=DENSE_VECTOR, filter=flt, limit=limit,
                               score_threshold=score_threshold, with_payload=with_payload, with_vector=False)


def sparse(vector: SparseVector, flt: models.Filter | None, limit: int, with_payload: bool) -> models.QueryRequest:
    """Best points by IDF-weighted sparse dot product."""
    return models.QueryRequest(query=_sparse(vector), using=SPARSE_VECTOR, filter=flt, limit=limit,
                               with_payload=with_payload, with_vector=False)


def rrf(dense: list[float], sparse: SparseVector | None, flt: models.Filter | None, limit: int,
        prefetch_limit: int, rrf_k: int, with_payload: bool) -> models.QueryRequest:
    """Dense and sparse candidates (without a sparse query: dense alone) fused by reciprocal rank fusion."""
    prefetch = [models.Prefetch(query=dense, using=DENSE_VECTOR, limit=prefetch_limit, filter=flt)]
    if sparse is not None:
        prefetch.append(models.Prefetch(query=_sparse(sparse), using=SPARSE_VECTOR, limit=prefetch_limit, filter=flt))
    return models.QueryRequest(prefetch=prefetch, query=models.RrfQuery(rrf=models.Rrf(k=rrf_k)), filter=flt,
                               limit=limit, with_payload=with_payload, with_vector=False)


def convex(dense_vector: list[float], sparse_vector: SparseVector, flt: models.Filter | None, limit: int,
           prefetch_limit: int, weights: ConvexWeights, with_payload: bool) -> models.QueryRequest:
    """Convex fusion as one query; see ``edge_queries.convex``."""
    lexical = models.Prefetch(query=_sparse(sparse_vector), using=SPARSE_VECTOR, limit=prefetch_limit, filter=flt)
    union = models.Prefetch(query=dense_vector, using=DENSE_VECTOR, limit=2 * prefetch_limit, filter=flt, prefetch=[
        models.Prefetch(query=dense_vector, using=DENSE_VECTOR, limit=prefetch_limit, filter=flt), lexical])
    bm25 = "$score[1]"
    raw: models.Expression = "$score[0]"
    if (weights.cosine_scale, weights.cosine_shift) != (1.0, 0.0):
        raw = models.SumExpression(sum=[models.MultExpression(mult=[weights.cosine_scale, raw]),
                                        weights.cosine_shift])
    formula = models.SumExpression(sum=[
        models.MultExpression(mult=[1.0 - weights.sparse_weight, models.MaxExpression(max=[0.0, raw])]),
        models.MultExpression(mult=[weights.sparse_weight, models.DivExpression(div=models.DivParams(
            left=bm25, right=models.SumExpression(sum=[bm25, weights.sparse_half]), by_zero_default=0.0))]),
    ])
    return models.QueryRequest(prefetch=[union, lexical], query=models.FormulaQuery(formula=formula,
                                                                                    defaults={bm25: 0.0}),
                               filter=flt, limit=limit, with_payload=with_payload, with_vector=False)
