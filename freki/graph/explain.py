"""Why a hit scored as it did: its dense and sparse scores, the fused score, the graph's part and the
query terms it contains (``RetrievalOptions.explain``).

Scores are recomputed for the returned hits only: the dense score is the exact cosine of the chunk's stored
vector to the query vector; the sparse score is the store's BM25 of the chunk (0 when it shares no term
with the query), from one sparse search restricted to the hits' documents.

With several embedding models each hit is explained in the lane (model and collection) that holds it
(``Hit.model``): its vector is fetched from that collection and compared with the query embedded by that
model, the cosine aligned to the standard model's scale (``SearchLane.calibrate``; the standard model's
cosines unchanged), so the dense scores of hits of different models compare as the retriever compared them.
One vector fetch and one sparse search per lane that holds a hit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from freki.embed.sparse import SparseEncoder
from freki.graph.expansion import Edge, GraphScore
from freki.search.retrieval import Hit, Hits, Query, SearchLane, scope_filter
from freki.store import FieldMatch


@dataclass(frozen=True)
class Explanation:
    """One hit's score, taken apart."""

    dense_score: float  # cosine of the chunk to the query (in its model, aligned to the standard model's scale)
    sparse_score: float  # BM25 of the chunk for the query
    fused_score: float  # the retriever's relevance (fusion / re-ranking), before the graph
    graph_bonus: float = 0.0  # edge_weight x edge bonus + centrality_weight x centrality
    edge_bonus: float = 0.0
    centrality: float = 0.0
    type_weight: float = 1.0
    neighbour: bool = False  # joined through a link of a top hit
    edges: list[Edge] = field(default_factory=list)
    matched_terms: list[str] = field(default_factory=list)
    model: str = ""  # the embedding model whose cosine dense_score is


def explain(query: Query, hits: Hits, lanes: Sequence[SearchLane], sparse: SparseEncoder,
            fused: Mapping[str, float], graph: Mapping[str, GraphScore]) -> Hits:
    """``hits`` with an ``Explanation`` each (``lanes``: every model's, the standard one first; ``fused``:
    chunk -> score before the graph)."""
    if not hits:
        return hits
    by_model = {lane.model: lane for lane in lanes}
    lane_of = {h.chunk_id: by_model.get(h.model, lanes[0]) for h in hits}
    sparse_query = sparse.encode_query(query.text, query.language, query.tenant_id)
    dense: dict[str, float] = {}
    lexical: dict[str, float] = {}
    for lane in lanes:
        mine = [h for h in hits if lane_of[h.chunk_id] is lane]
        if not mine:
            continue
        vector = lane.embed_query(query.text, query.tenant_id)
        for p in lane.chunks.retrieve([h.chunk_id for h in mine], with_vectors=True):
            if p.dense is not None:
                dense[p.id] = lane.calibrate(float(np.dot(vector, p.dense)))
        docs = tuple(dict.fromkeys(h.document_id for h in mine))
        if sparse_query.indices:
            lexical.update((p.id, p.score) for p in lane.chunks.search_sparse(
                sparse_query, [*scope_filter(query), FieldMatch("document_id", docs)], 50 * len(mine),
                with_payload=False))
    terms = sparse.query_terms(query.text, query.language)
    out = Hits()
    for hit in hits:
        g = graph.get(hit.document_id, GraphScore())
        # The chunk's terms as it was indexed (its recorded language; English before languages were recorded).
        chunk_terms = set(sparse.analyzer(str(hit.payload.get("language") or "en")).terms(hit.content))
        out.append(Hit(hit.chunk_id, hit.score, hit.payload, hit.model, Explanation(
            dense_score=dense.get(hit.chunk_id, 0.0),
            sparse_score=float(lexical.get(hit.chunk_id, 0.0)),
            fused_score=float(fused.get(hit.chunk_id, hit.score)),
            graph_bonus=g.graph_bonus, edge_bonus=g.edge_bonus, centrality=g.centrality,
            type_weight=g.type_weight, neighbour=g.neighbour, edges=list(g.edges),
            matched_terms=[t for t in terms if t in chunk_terms], model=lane_of[hit.chunk_id].model,
        )))
    out.below_threshold = hits.below_threshold
    return out
