"""Retrieval: search the store within the tenant in the requested mode, fuse, re-rank, threshold, top-k.

Modes (``Query.mode``):

* ``dense``: nearest chunks by embedding cosine.
* ``sparse``: BM25 over the lexical sparse vectors (``freki.embed.sparse``; IDF applied by Qdrant).
* ``hybrid``: both, fused as configured (``RetrievalConfig.fusion``): ``"rrf"`` runs Qdrant's
  prefetch + reciprocal rank fusion inside the store; ``"convex"`` (default) fuses calibrated
  scores with a confidence-weighted sum, also inside the store (``search_convex``; see
  ``freki.search.fusion`` for why, and for what ``relevance_score`` means in each mode — always in [0, 1]).

With several embedding models (``freki.embed.layout``) every model's collection is searched with the query
embedded by that model, and the per-model candidate lists are merged by relevance: each model's cosines are
first aligned to the standard model's scale (``SearchLane.calibrate``, ``freki.embed.calibration``; inside the
engine's fusion formula for hybrid search), then go through the same calibration (``fusion.dense_relevance``),
BM25 scores through the same saturation, so a merged list is on the one relevance scale (docs/embedding-models.md).
A document lives in one model's collection, so lists never overlap.

Then, in order: query variants are merged (mean relevance, or RRF when fusion is RRF); the
optional cross-encoder re-ranks the head of the list; the score threshold drops hits below it;
MMR (when ``mmr_diversity`` > 0) picks the top-k for diversity, otherwise the top-k by relevance.
With MMR the hits come in MMR selection order (each keeps its relevance score).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from freki.embed.calibration import Alignment
from freki.embed.query_cache import EmbedQuery
from freki.embed.sparse import SparseEncoder
from freki.search import fusion
from freki.search.fusion import Scored
from freki.search.rerank import Reranker, mmr_order
from freki.store import ConvexWeights, FieldMatch, ScoredPoint, SparseVector, VectorStore
from freki.store.access import visible_to


@dataclass(frozen=True)
class Query:
    """A validated retrieval request with defaults applied."""

    tenant_id: str
    text: str
    top_k: int
    score_threshold: float
    filters: Sequence[FieldMatch] = ()
    document_ids: Sequence[str] = ()
    variants: Sequence[str] = ()
    mode: str = "dense"
    mmr_diversity: float | None = None
    rerank: bool = False
    # Knowledge graph (freki.graph, applied by the engine after retrieval): expand the top hits' linked
    # documents, and explain each hit's score.
    graph_expand: bool = False
    explain: bool = False
    # The query's language as the caller gives it (BCP-47, RequestMetadata.language); "" = detected.
    language: str = ""
    # The caller's access groups (freki.store.access); None = every document of the tenant.
    access_groups: tuple[str, ...] | None = None
    # Previous/next chunks of each hit's document to add (freki.search.neighbours, applied by the engine).
    neighbours: int = 0


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk."""

    chunk_id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)
    model: str = ""  # the embedding model whose collection held the chunk
    # Set with Query.explain (a freki.graph.explain.Explanation).
    explanation: Any = field(default=None, compare=False)
    # A chunk added only as a neighbour of the hit with this chunk id (freki.search.neighbours); "" for a hit.
    neighbour_of: str = ""

    @property
    def document_id(self) -> str:
        return str(self.payload.get("document_id", ""))

    @property
    def content(self) -> str:
        return str(self.payload.get("content", ""))


@dataclass(frozen=True)
class RetrievalConfig:
    """How hybrid search fuses and how deep the candidate lists go (from ``RetrievalSettings``)."""

    fusion: Literal["rrf", "convex"] = "convex"
    sparse_weight: float = 0.4
    sparse_half_score: float = 8.0  # per query term
    candidates: int = 100
    rrf_k: int = 60
    rerank_candidates: int = 30


def scope_filter(query: Query) -> list[FieldMatch]:
    """Tenant isolation first, then the caller's filters: every search goes through this."""
    flt = [FieldMatch("tenant_id", (query.tenant_id,)), *visible_to(query.access_groups)]
    if query.document_ids:
        flt.append(FieldMatch("document_id", tuple(query.document_ids)))
    flt.extend(query.filters)
    return flt


@dataclass(frozen=True)
class SearchLane:
    """One embedding model's collection and its query embedding."""

    model: str
    embed_query: EmbedQuery
    chunks: VectorStore
    # this model's cosine -> the scale of the thresholds (the standard model's; ``freki.embed.calibration``)
    calibrate: Alignment = Alignment()


class Hits(list[Hit]):
    """Hits, best first; ``below_threshold``: how many of the top_k best matches the score threshold removed."""

    below_threshold: int = 0


class Retriever:
    """Runs queries against the chunk store."""

    def __init__(
        self,
        *,
        embed_query: EmbedQuery,
        chunks: VectorStore,
        sparse: SparseEncoder | None = None,
        config: RetrievalConfig | None = None,
        reranker: Reranker | None = None,
        lanes: Sequence[SearchLane] = (),
        model: str = "",
        calibrate: Alignment | None = None,
        type_weights: Callable[[], Mapping[str, float]] | None = None,
    ) -> None:
        """``embed_query`` and ``chunks``: the standard ``model``'s (``calibrate``: its cosine -> the thresholds'
        scale, ``freki.embed.calibration``); ``lanes``: every other model's; ``type_weights()``: the retriever
        weight of each ``document_type`` that has one (the type registry, read per search)."""
        self.lanes = [SearchLane(model, embed_query, chunks, calibrate or Alignment()), *lanes]
        self._sparse = sparse or SparseEncoder()
        self.config = config or RetrievalConfig()
        self.reranker = reranker
        self._type_weights = type_weights or dict

    def retrieve(self, query: Query) -> Hits:
        """Top-k chunks for the query with relevance ≥ threshold, best first (or in MMR order)."""
        flt = scope_filter(query)
        texts = list(dict.fromkeys([query.text, *query.variants]))
        second_stage = bool(query.mmr_diversity) or (query.rerank and self.reranker is not None)
        # Re-ranking, MMR and variant merging choose among candidates; a plain list needs only top_k (hybrid
        # search fuses its candidate lists inside the engine and returns the top of the fused list).
        weights = self._type_weights()
        deep = second_stage or len(texts) > 1 or bool(weights)
        depth = max(query.top_k, self.config.candidates) if deep else query.top_k
        payloads: dict[str, dict[str, Any]] = {}
        # Candidate lists deeper than top_k carry ids and scores only: loading ~100 payloads per search
        # cost more than the search itself (and holds the GIL); the hits' payloads are loaded at the end.
        collect = payloads if depth <= query.top_k else None
        origin: dict[str, SearchLane] = {}
        lexical = query.mode in ("sparse", "hybrid")
        tenant = query.tenant_id
        lists = [self._merged(text, self._sparse.encode_query(text, query.language, tenant) if lexical else None,
                              query.mode, flt, depth, collect, origin, tenant) for text in texts]
        if len(lists) == 1:
            ranked = lists[0]
        elif query.mode == "hybrid" and self.config.fusion == "rrf":
            ranked = fusion.rrf([[s.id for s in lst] for lst in lists], k=self.config.rrf_k)
        else:
            ranked = fusion.mean_relevance(lists)
        if query.rerank and self.reranker is not None:
            head = ranked[: max(query.top_k, self.config.rerank_candidates)]
            self._load_payloads([s.id for s in head], payloads, origin)
            ranked = self._rerank(query.text, head, payloads)
        if weights:
            ranked = self._weighted(ranked, weights, payloads, origin)
        below = sum(s.score < query.score_threshold for s in ranked[: query.top_k])
        ranked = [s for s in ranked if s.score >= query.score_threshold]
        if query.mmr_diversity:
            ranked = self._mmr(ranked, query.top_k, query.mmr_diversity, origin)
        hits = Hits(self._hits(ranked, query.top_k, payloads, origin))
        hits.below_threshold = below
        return hits

    def _hits(self, ranked: list[Scored], k: int, payloads: dict[str, dict[str, Any]],
              origin: dict[str, SearchLane]) -> list[Hit]:
        """The first k ranked candidates that still exist, with payloads (loaded where a search left none)."""
        hits: list[Hit] = []
        start = 0
        while len(hits) < k and start < len(ranked):
            window = ranked[start : start + k - len(hits)]
            start += len(window)
            self._load_payloads([s.id for s in window], payloads, origin)
            # A candidate deleted since the search (document removed or re-indexed) is skipped.
            hits.extend(Hit(s.id, s.score, payloads[s.id], origin[s.id].model) for s in window if s.id in payloads)
        return hits

    def _load_payloads(self, ids: list[str], payloads: dict[str, dict[str, Any]],
                       origin: dict[str, SearchLane]) -> None:
        for lane in self.lanes:
            missing = [i for i in ids if i not in payloads and origin[i] is lane]
            if missing:
                payloads.update((p.id, p.payload) for p in lane.chunks.retrieve(missing))

    def _merged(
        self, text: str, sparse_query: SparseVector | None, mode: str, flt: list[FieldMatch], depth: int,
        payloads: dict[str, dict[str, Any]] | None, origin: dict[str, SearchLane], tenant: str,
    ) -> list[Scored]:
        """``_search`` in every model's collection, merged by relevance (documents live in one of them)."""
        merged: list[Scored] = []
        for lane in self.lanes:
            found = self._search(lane, text, sparse_query, mode, flt, depth, payloads, tenant)
            origin.update((s.id, lane) for s in found)
            merged.extend(found)
        return fusion.sort_scored(merged)[:depth] if len(self.lanes) > 1 else merged

    # -- one query text in one mode ------------------------------------------------------------------
    def _search(
        self, lane: SearchLane, text: str, sparse_query: SparseVector | None, mode: str, flt: list[FieldMatch],
        depth: int, payloads: dict[str, dict[str, Any]] | None, tenant: str,
    ) -> list[Scored]:
        """Candidates for one query text (``sparse_query``: its lexical vector, in sparse and hybrid mode);
        their payloads go into ``payloads`` unless it is None."""
        light = payloads is None
        if mode == "dense":
            vector = lane.embed_query(text, tenant)
            points = lane.chunks.search_dense(vector.tolist(), flt, depth, with_payload=not light)
            return self._scored(points, payloads, lambda s: fusion.dense_relevance(lane.calibrate(s)))
        if mode not in ("sparse", "hybrid"):
            raise ValueError(f"unknown search mode {mode!r}; use dense, sparse or hybrid")
        if sparse_query is None:
            sparse_query = self._sparse.encode_query(text, "", tenant)
        if mode == "sparse":
            points = (lane.chunks.search_sparse(sparse_query, flt, depth, with_payload=not light)
                      if sparse_query.indices else [])
            return self._scored(points, payloads, self._lexical_relevance(sparse_query))
        vector = lane.embed_query(text, tenant)
        # Each list as deep as fusion needs, whatever the depth of the fused list.
        prefetch = max(depth, self.config.candidates)
        if self.config.fusion == "rrf":
            points = lane.chunks.search_hybrid(vector.tolist(), sparse_query, flt, depth, prefetch,
                                               with_payload=not light)
            lists = 2 if sparse_query.indices else 1
            return self._scored(points, payloads, lambda s: fusion.rrf_relevance(s, lists, self.config.rrf_k))
        # Convex fusion runs in the engine, in one call with the payloads of the top (fusion.convex defines it):
        # converting candidate lists into Python costs more than the searches
        # (docs/decisions/0004-fusion-in-the-engine.md).
        # A type-specific model's cosines are aligned to the standard model's scale in the same formula.
        weights = ConvexWeights(self.config.sparse_weight, self._half_score(sparse_query),
                                cosine_scale=lane.calibrate.scale, cosine_shift=lane.calibrate.shift)
        points = lane.chunks.search_convex(vector.tolist(), sparse_query, flt, depth, prefetch, weights,
                                           with_payload=not light)
        # Ties (e.g. chunks of relevance 0 in a small collection) in fusion's order, whichever engine ran it.
        return fusion.sort_scored(self._scored(points, payloads, lambda s: min(1.0, s)))

    def _half_score(self, sparse_query: SparseVector) -> float:
        # BM25 sums over query terms, so the score that counts as "half relevant" scales with their number.
        return self.config.sparse_half_score * max(1, len(sparse_query.indices))

    def _lexical_relevance(self, sparse_query: SparseVector) -> Callable[[float], float]:
        half = self._half_score(sparse_query)
        return lambda score: fusion.sparse_relevance(score, half)

    @staticmethod
    def _scored(points: Sequence[ScoredPoint], payloads: dict[str, dict[str, Any]] | None,
                relevance: Callable[[float], float]) -> list[Scored]:
        if payloads is not None:
            for p in points:
                payloads.setdefault(p.id, p.payload)
        return [Scored(p.id, relevance(p.score)) for p in points]

    # -- second stage ----------------------------------------------------------------------------------
    def _weighted(self, ranked: list[Scored], weights: Mapping[str, float], payloads: dict[str, dict[str, Any]],
                  origin: dict[str, SearchLane]) -> list[Scored]:
        """Each candidate's relevance times its document type's weight (1 for other types), capped at 1:
        a weight moves a type's chunks across the threshold and the top-k (Mindnet's retriever_weight)."""
        self._load_payloads([s.id for s in ranked], payloads, origin)

        def weight(chunk_id: str) -> float:
            metadata = payloads.get(chunk_id, {}).get("metadata")
            kind = metadata.get("document_type") if isinstance(metadata, dict) else None
            return weights.get(kind, 1.0) if isinstance(kind, str) else 1.0

        return fusion.sort_scored(Scored(s.id, min(1.0, s.score * weight(s.id))) for s in ranked)

    def _rerank(self, text: str, head: list[Scored], payloads: dict[str, dict[str, Any]]) -> list[Scored]:
        assert self.reranker is not None
        scores = self.reranker.score(text, [str(payloads.get(s.id, {}).get("content", "")) for s in head])
        return fusion.sort_scored(Scored(s.id, float(r)) for s, r in zip(head, scores, strict=True))

    def _mmr(self, ranked: list[Scored], k: int, diversity: float, origin: dict[str, SearchLane]) -> list[Scored]:
        if len(ranked) <= 1:
            return ranked
        # Vectors of different models are not comparable: each model gets its own block of coordinates, so
        # chunks of two models count as unrelated (cosine 0) and diversity works within each model.
        stored: dict[str, np.ndarray] = {}
        offset = 0
        blocks = []
        for lane in self.lanes:
            found = lane.chunks.retrieve([s.id for s in ranked if origin.get(s.id) is lane], with_vectors=True)
            vecs = {p.id: np.asarray(p.dense, dtype=np.float32) for p in found if p.dense is not None}
            dim = next((len(v) for v in vecs.values()), 0)
            blocks.append((vecs, offset))
            offset += dim
        width = offset
        for vecs, start in blocks:
            for i, v in vecs.items():
                row = np.zeros(width, dtype=np.float32)
                row[start : start + len(v)] = v
                stored[i] = row
        usable = [s for s in ranked if s.id in stored]
        vectors = np.asarray([stored[s.id] for s in usable], dtype=np.float32)
        order = mmr_order([s.score for s in usable], vectors, k, diversity)
        return [usable[i] for i in order]
