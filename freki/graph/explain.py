"""Why a hit scored as it did: its dense and sparse scores, the fused score, the graph's part and the
query terms it contains (``RetrievalOptions.explain``).

Scores are recomputed for the returned hits only, each in its model's collection: the dense score is the
exact cosine of the chunk's stored vector to that model's query vector; the sparse score is the store's
BM25 of the chunk (0 when it shares no term with the query), from one sparse search per collection
restricted to the hits' documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from freki.embed.sparse import SparseEncoder, tokenize
from freki.graph.expansion import Edge, GraphScore
from freki.search.retrieval import Hit, Hits, Query, SearchLane, scope_filter
from freki.store import FieldMatch


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


def explain(query: Query, hits: Hits, lanes: Sequence[SearchLane], sparse: SparseEncoder,
            fused: Mapping[str, float], graph: Mapping[str, GraphScore]) -> Hits:
    """``hits`` with an ``Explanation`` each (``fused``: chunk -> score before the graph). Each hit is scored
    in its own model's collection (``Hit.model``; the first lane, the standard model's, when unset)."""
    if not hits:
        return hits
    dense: dict[str, float] = {}
    lexical: dict[str, float] = {}
    sparse_query = sparse.encode_query(query.text)
    for lane in lanes:
        mine = [h for h in hits if (h.model or lanes[0].model) == lane.model]
        if not mine:
            continue
        vector = lane.embed_query(query.text)
        dense.update((p.id, float(np.dot(vector, p.dense))) for p in lane.chunks.retrieve(
            [h.chunk_id for h in mine], with_vectors=True) if p.dense is not None)
        docs = tuple(dict.fromkeys(h.document_id for h in mine))
        if sparse_query.indices:
            lexical.update((p.id, p.score) for p in lane.chunks.search_sparse(
                sparse_query, [*scope_filter(query), FieldMatch("document_id", docs)], 50 * len(mine),
                with_payload=False))
    terms = sparse.query_terms(query.text)
    out = Hits()
    for hit in hits:
        g = graph.get(hit.document_id, GraphScore())
        chunk_terms = set(tokenize(hit.content))
        out.append(Hit(hit.chunk_id, hit.score, hit.payload, hit.model, Explanation(
            dense_score=dense.get(hit.chunk_id, 0.0),
            sparse_score=float(lexical.get(hit.chunk_id, 0.0)),
            fused_score=float(fused.get(hit.chunk_id, hit.score)),
            graph_bonus=g.graph_bonus, edge_bonus=g.edge_bonus, centrality=g.centrality,
            type_weight=g.type_weight, neighbour=g.neighbour, edges=list(g.edges),
            matched_terms=[t for t in terms if t in chunk_terms],
        )))
    out.below_threshold = hits.below_threshold
    return out
