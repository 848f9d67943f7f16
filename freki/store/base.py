"""The vector store contract of Freki: value types and the ``VectorStore`` protocol.

Two engines implement it (``EdgeStore``: Qdrant's engine in-process; ``RemoteStore``: a Qdrant server through
qdrant-client), chosen by ``freki.store.make_store``. A store instance serves one collection, opened with
``ensure_collection``; the collection holds a cosine dense vector named ``dense`` and an optional IDF-weighted
sparse vector named ``sparse`` per point.

Conventions shared by both engines:
  * Point ids are UUID strings; they are returned in canonical form (lower-case, hyphenated).
  * A filter is a sequence of ``FieldMatch`` that are ANDed; an empty filter matches every point.
  * Dense vectors are stored normalised (cosine), so ``StoredPoint.dense`` is the unit-length vector.
  * Scores are what Qdrant returns: cosine in [-1, 1] for dense, dot product of IDF-weighted sparse vectors
    for sparse, reciprocal-rank-fusion sums for hybrid. The retrieval layer normalises them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

DENSE_VECTOR = "dense"
SPARSE_VECTOR = "sparse"
# Payload fields every collection indexes as keywords: the filters Freki always applies (tenant isolation,
# document replacement, GDPR deletion) and the dedup lookup by chunk hash.
INDEXED_KEYWORD_FIELDS: tuple[str, ...] = (
    "tenant_id",
    "document_id",
    "owner_id",
    "source_type",
    "generation",
)

MatchValue = str | int | bool


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: parallel lists of non-negative term indices and their weights."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class ChunkPoint:
    """One chunk to write: its UUID id, dense embedding, optional sparse vector and payload."""

    id: str
    dense: Sequence[float]
    sparse: SparseVector | None
    payload: dict[str, Any]


@dataclass(frozen=True)
class StoredPoint:
    """A point read back by ``scroll`` or ``retrieve``; the vectors are set only when they were requested
    (``sparse`` stays None in a collection without sparse vectors)."""

    id: str
    payload: dict[str, Any]
    dense: list[float] | None = None
    sparse: SparseVector | None = None


@dataclass(frozen=True)
class ScoredPoint:
    """A search hit."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass(frozen=True)
class ConvexWeights:
    """How ``search_convex`` fuses: ``(1 - sparse_weight) * max(0, cosine) + sparse_weight * s / (s + sparse_half)``
    for a point's cosine and sparse score ``s`` (0 where the sparse search did not return it)."""

    sparse_weight: float
    sparse_half: float
    # A type-specific model's cosine aligned to the standard model's scale first (``freki.embed.calibration``):
    # ``max(0, cosine_scale * cosine + cosine_shift)`` stands for ``max(0, cosine)``.
    cosine_scale: float = 1.0
    cosine_shift: float = 0.0


@dataclass(frozen=True)
class NumericRange:
    """Bounds of a range condition; ``None`` leaves that side open."""

    gte: float | None = None
    gt: float | None = None
    lte: float | None = None
    lt: float | None = None


@dataclass(frozen=True)
class FieldMatch:
    """One filter condition on the payload value at ``key`` (a dotted path, e.g. ``"metadata.lang"``).

    * ``values``: the value equals one of them; for a list-valued field, one of its elements does
      (``match_all``: every one of ``values`` is among its elements).
    * ``range`` (instead of ``values``): the numeric value, or one element of a numeric list, lies within it.
    * ``fallback_key``: where the point has no value at ``key`` (missing, null or an empty list), the condition
      is tested on ``fallback_key`` instead. Caller metadata that shares a name with a system field uses it:
      the caller's value wins, the system field answers for documents that do not set the key.
    * ``exclude`` negates the whole condition, so a point lacking the key matches (Qdrant ``must_not``).
    * ``or_empty``: a point with no value at ``key`` also matches (documents without access groups are
      tenant-wide: ``freki.store.access``); with no ``values``, only such points match.
    """

    key: str
    values: tuple[MatchValue, ...] = ()
    exclude: bool = False
    match_all: bool = False
    range: NumericRange | None = None
    fallback_key: str | None = None
    or_empty: bool = False


Filter = Sequence[FieldMatch]


@dataclass(frozen=True)
class CollectionSpec:
    """What a collection must look like: its name, dense vector size and the model that made the vectors.

    ``keyword_indexes`` and ``float_indexes`` name payload fields indexed on top of ``INDEXED_KEYWORD_FIELDS``
    (for fast filters on a server; created when missing, never dropped).
    """

    name: str
    dense_dim: int
    embedding_model: str
    sparse: bool = True
    keyword_indexes: tuple[str, ...] = ()
    float_indexes: tuple[str, ...] = ()


def payload_indexes(spec: CollectionSpec) -> dict[str, str]:
    """Every payload index a collection of ``spec`` has: field path -> ``"keyword"`` or ``"float"``."""
    return {**dict.fromkeys((*INDEXED_KEYWORD_FIELDS, *spec.keyword_indexes), "keyword"),
            **dict.fromkeys(spec.float_indexes, "float")}


@runtime_checkable
class VectorStore(Protocol):
    """A chunk store with filtered dense, sparse and hybrid search; safe to call from many threads."""

    backend: str

    @property
    def collection(self) -> str | None:
        """Name of the collection opened by ``ensure_collection``, or None before that."""
        ...

    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing, else check it was built for ``spec`` and open it.

        Raises:
            EmbeddingModelMismatch: the collection exists with another embedding model or dense size.
            StoreUnavailable: the engine cannot be reached or the data dir is in use.
        """
        ...

    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        """Insert or replace points (all or nothing: input is validated before anything is written)."""
        ...

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete points by id; ids that do not exist are ignored."""
        ...

    def delete_where(self, filter: Filter) -> int:
        """Delete every point matching a non-empty filter and return how many matched."""
        ...

    def set_payload(self, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge top-level ``payload`` keys into existing points (a nested dict replaces the old one)."""
        ...

    def apply(
        self,
        upserts: Sequence[ChunkPoint],
        delete_ids: Sequence[str],
        payload_updates: Sequence[tuple[Sequence[str], dict[str, Any]]],
    ) -> None:
        """Apply one logical batch (upserts, then payload updates, then deletes) that readers see whole."""
        ...

    # Searches return payloads unless ``with_payload=False``: candidate lists for fusion need only ids
    # and scores, and loading ~100 payloads per search costs more than the search itself.
    def search_dense(
        self, vector: Sequence[float], filter: Filter, limit: int, score_threshold: float | None = None,
        *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        """Nearest points by cosine similarity, best first, optionally only those scoring >= threshold."""
        ...

    def search_sparse(
        self, vector: SparseVector, filter: Filter, limit: int, *, with_payload: bool = True
    ) -> list[ScoredPoint]:
        """Best points by IDF-weighted sparse dot product, best first."""
        ...

    def search_hybrid(
        self, dense: Sequence[float], sparse: SparseVector, filter: Filter, limit: int, prefetch_limit: int,
        *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        """Dense and sparse candidates (``prefetch_limit`` each) fused by reciprocal rank fusion."""
        ...

    def search_convex(
        self, dense: Sequence[float], sparse: SparseVector, filter: Filter, limit: int, prefetch_limit: int,
        weights: ConvexWeights, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        """Dense and sparse candidates (``prefetch_limit`` each) fused by ``weights`` in the engine, best first;
        every candidate is scored with its exact cosine (also one only the sparse search found)."""
        ...

    def scroll(
        self, filter: Filter, limit: int, offset: str | None = None, with_vectors: bool = False,
        with_sparse: bool = False,
    ) -> tuple[list[StoredPoint], str | None]:
        """One page of matching points in id order, plus the offset of the next page (None at the end).
        ``with_vectors``: the dense vector; ``with_sparse``: the sparse one too (and the dense)."""
        ...

    def retrieve(self, ids: Sequence[str], with_vectors: bool = False, with_sparse: bool = False) -> list[StoredPoint]:
        """The points with these ids that exist, in the order of ``ids`` (``with_sparse``: both vectors)."""
        ...

    def count(self, filter: Filter) -> int:
        """Exact number of points matching the filter."""
        ...

    def optimize(self) -> None:
        """Build search indexes (HNSW) now; blocks, so call it after bulk loads, not per write."""
        ...

    def purge(self) -> bool:
        """Remove deleted points from the engine's files (segments and write-ahead log); False when the engine
        cannot (a Qdrant server vacuums on its own schedule). Blocks writes, and readers briefly."""
        ...

    def value_counts(self, key: str, filter: Filter = ()) -> dict[str, int]:
        """Exact number of matching points per value of an indexed keyword field (e.g. ``generation``)."""
        ...

    def close(self) -> None:
        """Release the engine after in-flight calls finish; later calls raise ``CollectionNotReady``."""
        ...


def scroll_pages(store: VectorStore, filter: Filter, limit: int, *, with_vectors: bool = False) -> Iterator[
    list[StoredPoint]
]:
    """Every point matching ``filter``, page by page (``scroll`` until it returns no next offset)."""
    offset: str | None = None
    while True:
        page, offset = store.scroll(filter, limit=limit, offset=offset, with_vectors=with_vectors)
        yield page
        if offset is None:
            return


def vector_selector(with_vectors: bool, with_sparse: bool = False) -> bool | list[str]:
    """Which vectors to ask either engine for: only the dense one unless the sparse one is wanted too (reads on
    the query path need the dense vector alone), every named vector (the sparse one may not exist) if it is."""
    return True if with_sparse else [DENSE_VECTOR] if with_vectors else False


def stored_point(record: Any, with_vectors: bool) -> StoredPoint:
    """A record of either engine as a StoredPoint (qdrant-client and qdrant-edge records share
    ``id``, ``payload`` and a named-vector dict ``vector``)."""
    dense = sparse = None
    vectors = record.vector if with_vectors and isinstance(record.vector, dict) else {}
    if DENSE_VECTOR in vectors:
        dense = [float(x) for x in cast(list[float], vectors[DENSE_VECTOR])]
    if (found := vectors.get(SPARSE_VECTOR)) is not None:
        sparse = SparseVector([int(i) for i in found.indices], [float(v) for v in found.values])
    return StoredPoint(str(record.id), dict(record.payload or {}), dense, sparse)
