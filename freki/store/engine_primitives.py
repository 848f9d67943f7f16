"""What each store engine supplies to ``GuardedStore`` (``freki.store.guarded``): the ``_engine_*`` primitives.

They receive validated, canonical input and are called under the right lock; ``GuardedStore`` implements the
public ``VectorStore`` methods on top of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from freki.store.base import (
    ChunkPoint,
    CollectionSpec,
    ConvexWeights,
    FieldMatch,
    ScoredPoint,
    SparseVector,
    StoredPoint,
)

PayloadUpdates = list[tuple[list[str], dict[str, Any]]]
Conditions = tuple[FieldMatch, ...]


class EnginePrimitives(ABC):
    """The engine half of a store; see the module docstring."""

    @abstractmethod
    def _engine_open(self, spec: CollectionSpec) -> None: ...

    @abstractmethod
    def _engine_write(self, upserts: list[ChunkPoint], updates: PayloadUpdates, deletes: list[str]) -> None: ...

    @abstractmethod
    def _engine_delete_where(self, conditions: Conditions) -> None: ...

    @abstractmethod
    def _engine_search_dense(self, vector: list[float], conditions: Conditions, limit: int,
                             score_threshold: float | None, with_payload: bool) -> list[ScoredPoint]: ...

    @abstractmethod
    def _engine_search_sparse(self, vector: SparseVector, conditions: Conditions, limit: int,
                              with_payload: bool) -> list[ScoredPoint]: ...

    @abstractmethod
    def _engine_search_hybrid(self, dense: list[float], sparse: SparseVector | None, conditions: Conditions,
                              limit: int, prefetch_limit: int, with_payload: bool) -> list[ScoredPoint]: ...

    @abstractmethod
    def _engine_search_convex(self, dense: list[float], sparse: SparseVector, conditions: Conditions, limit: int,
                              prefetch_limit: int, weights: ConvexWeights, with_payload: bool) -> list[ScoredPoint]: ...

    @abstractmethod
    def _engine_scroll(self, conditions: Conditions, limit: int, offset: str | None,
                       with_vectors: bool, with_sparse: bool) -> tuple[list[StoredPoint], str | None]: ...

    @abstractmethod
    def _engine_retrieve(self, ids: list[str], with_vectors: bool, with_sparse: bool = False) -> list[StoredPoint]: ...

    @abstractmethod
    def _engine_count(self, conditions: Conditions) -> int: ...

    @abstractmethod
    def _engine_optimize(self) -> None: ...

    @abstractmethod
    def _engine_purge(self) -> bool: ...

    @abstractmethod
    def _engine_value_counts(self, key: str, conditions: Conditions) -> dict[str, int]: ...

    @abstractmethod
    def _engine_close(self) -> None: ...
