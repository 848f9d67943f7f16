"""Retrieval: embed the query, search the store within the tenant, filter, threshold, top-k.

Relevance scores are in [0, 1]. In dense mode the score is the cosine similarity of the
query and chunk embeddings, clipped at 0 (MiniLM cosines below 0 mean "unrelated").
The score threshold is a minimum on that score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from freki.embedding import Embedder
from freki.store import FieldMatch, ScoredPoint, VectorStore

# Filter keys that address top-level payload fields; any other key addresses document metadata.
TOP_LEVEL_KEYS = {
    "document_id": "document_id",
    "source": "source",
    "source_type": "source_type",
    "content_type": "source_type",
    "owner_id": "owner_id",
}


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


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk."""

    chunk_id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def document_id(self) -> str:
        return str(self.payload.get("document_id", ""))

    @property
    def content(self) -> str:
        return str(self.payload.get("content", ""))


def metadata_filter(key: str, values: Sequence[str], exclude: bool = False) -> FieldMatch:
    """Map a user-facing filter key to the payload field it addresses."""
    path = TOP_LEVEL_KEYS.get(key, f"metadata.{key}")
    return FieldMatch(path, tuple(values), exclude)


def scope_filter(query: Query) -> list[FieldMatch]:
    """Tenant isolation first, then the caller's filters: every search goes through this."""
    flt = [FieldMatch("tenant_id", (query.tenant_id,))]
    if query.document_ids:
        flt.append(FieldMatch("document_id", tuple(query.document_ids)))
    flt.extend(query.filters)
    return flt


class Retriever:
    """Runs queries against the chunk store."""

    def __init__(self, *, embedder: Embedder, chunks: VectorStore) -> None:
        self._embedder = embedder
        self._chunks = chunks

    def retrieve(self, query: Query) -> list[Hit]:
        """Top-k chunks for the query with score ≥ threshold, best first."""
        vector = self._embedder.embed_query(query.text)
        points = self._chunks.search_dense(
            vector.tolist(), scope_filter(query), query.top_k, score_threshold=query.score_threshold or None
        )
        return [_hit(p, max(0.0, min(1.0, p.score))) for p in points if p.score >= query.score_threshold]


def _hit(point: ScoredPoint, score: float) -> Hit:
    return Hit(chunk_id=point.id, score=score, payload=point.payload)
