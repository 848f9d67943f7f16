"""Why a hit scored as it did: its dense and sparse scores, the fused score, the graph's part and the
query terms it contains (``RetrievalOptions.explain``).

Scores are recomputed for the returned hits only: the dense score is the exact cosine of the chunk's stored
vector to the query vector; the sparse score is the store's BM25 of the chunk (0 when it shares no term
with the query), from one sparse search restricted to the hits' documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from freki.embed.sparse import SparseEncoder, tokenize
from freki.graph.expansion import Edge, GraphScore
from freki.search.retrieval import Hit, Hits, Query, scope_filter
from freki.store import FieldMatch, VectorStore


@dataclass(frozen=True)
class Explanation:
    """One hit's score, taken apart."""

    dense_score: float  # cosine of the chunk to the query
    sparse_score: float  # BM25 of the chunk for the query
    fused_score: float  # the retriever's relevance (fusion / re-ranking), before the graph
    graph_bonus: float = 0.0  # edge_weight x edge bonus + centrality_weight x centrality
    edge_bonus: float = 0.0
    centrality: float = 0.0
    type_weight: float = 1.0
    neighbour: bool = False  # joined through a link of a top hit
    edges: list[Edge] = field(default_factory=list)
    matched_terms: list[str] = field(default_factory=list)


def explain(query: Query, hits: Hits, chunks: VectorStore, embed_query: Callable[[str], np.ndarray],
            sparse: SparseEncoder, fused: Mapping[str, float], graph: Mapping[str, GraphScore]) -> Hits:
    """``hits`` with an ``Explanation`` each (``fused``: chunk -> score before the graph)."""
    if not hits:
        return hits
    vector = embed_query(query.text)
    vectors = {p.id: p.dense for p in chunks.retrieve([h.chunk_id for h in hits], with_vectors=True)}
    sparse_query = sparse.encode_query(query.text)
    docs = tuple(dict.fromkeys(h.document_id for h in hits))
    lexical = {p.id: p.score for p in chunks.search_sparse(
        sparse_query, [*scope_filter(query), FieldMatch("document_id", docs)], 50 * len(hits), with_payload=False,
    )} if sparse_query.indices else {}
    terms = sparse.query_terms(query.text)
    out = Hits()
    for hit in hits:
        stored = vectors.get(hit.chunk_id)
        g = graph.get(hit.document_id, GraphScore())
        chunk_terms = set(tokenize(hit.content))
        out.append(Hit(hit.chunk_id, hit.score, hit.payload, hit.model, Explanation(
            dense_score=float(np.dot(vector, stored)) if stored is not None else 0.0,
            sparse_score=float(lexical.get(hit.chunk_id, 0.0)),
            fused_score=float(fused.get(hit.chunk_id, hit.score)),
            graph_bonus=g.graph_bonus, edge_bonus=g.edge_bonus, centrality=g.centrality,
            type_weight=g.type_weight, neighbour=g.neighbour, edges=list(g.edges),
            matched_terms=[t for t in terms if t in chunk_terms],
        )))
    out.below_threshold = hits.below_threshold
    return out
