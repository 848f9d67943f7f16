"""What both store engines share: input checks, locking, collection binding and write-batch semantics.

``GuardedStore`` implements the public ``VectorStore`` methods once; an engine subclass supplies the
``_engine_*`` primitives (``freki.store.engine_primitives``), which receive already-validated, canonical input
and run under the right lock:

* reads take the shared side of a readers-writer lock, write batches the exclusive side, so in-process readers
  never see a half-applied batch;
* writes and ``optimize`` also pass a gate, so a write that would block behind a running optimisation waits
  *outside* the readers-writer lock and searches keep flowing meanwhile;
* with ``disk`` set (the embedded engine), every write first checks the data dir's free space
  (``freki.store.disk``): a write that does not fit above the refuse level raises ``DiskFull``, unwritten.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
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
from freki.store.disk import WRITE_FLOOR_BYTES, DiskWatermarks, batch_need
from freki.store.engine_primitives import Conditions, EnginePrimitives, PayloadUpdates
from freki.store.errors import CollectionNotReady, InvalidStoreInput, PointNotFound
from freki.store.rwlock import ReadWriteLock
from freki.store.validation import (
    canonical_id,
    canonical_ids,
    check_dense,
    check_filter,
    check_limit,
    check_payload,
    check_points,
    check_sparse,
    check_spec,
    check_weights,
)


class GuardedStore(EnginePrimitives):
    """Base class of the store engines; see the module docstring."""

    backend: str = ""

    def __init__(self) -> None:
        self._rw = ReadWriteLock()
        self._write_gate = threading.Lock()
        self._spec: CollectionSpec | None = None
        self._closed = False
        self.disk: DiskWatermarks | None = None

    # ----------------------------------------------------------------------------------------- lifecycle
    @property
    def collection(self) -> str | None:
        """Name of the open collection, or None before ``ensure_collection``."""
        return self._spec.name if self._spec else None

    def ensure_collection(self, spec: CollectionSpec) -> None:
        """Create the collection if missing, else verify its model and size, and bind this store to it."""
        check_spec(spec)
        with self._write_gate, self._rw.write():
            if self._closed:
                raise CollectionNotReady(f"the {self.backend} store is closed; open a new store")
            if self._spec is not None and self._spec.name != spec.name:
                raise InvalidStoreInput(
                    f"this store already serves collection {self._spec.name!r}; make another store for {spec.name!r}"
                )
            self._engine_open(spec)
            self._spec = spec

    def optimize(self) -> None:
        """Build search indexes now (blocks); searches continue meanwhile, writes wait."""
        with self._write_gate:
            self._require_open()
            self._check_disk("optimize", self._engine_rewrite_bytes())
            self._engine_optimize()

    def purge(self) -> bool:
        """Rewrite what deletes left behind out of the engine's files; see ``VectorStore.purge``.

        Writes wait; searches go on (nothing a purge writes matches a filtered read)."""
        with self._write_gate:
            self._require_open()
            self._check_disk("purge", self._engine_rewrite_bytes())
            self._engine_optimize()
            return self._engine_purge()

    def value_counts(self, key: str, filter: Sequence[FieldMatch] = ()) -> dict[str, int]:
        """Exact point counts per value of an indexed keyword field."""
        self._require_open()
        conditions = check_filter(filter)
        with self._reading():
            return self._engine_value_counts(key, conditions)

    def close(self) -> None:
        """Wait for in-flight calls, then release the engine. Safe to call twice."""
        with self._write_gate, self._rw.write():
            if self._closed:
                return
            self._closed = True
            self._engine_close()

    def __enter__(self) -> GuardedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------------- writes
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        """Insert or replace points; the whole batch is validated before anything is written."""
        self.apply(points, [], [])

    def delete_ids(self, ids: Sequence[str]) -> None:
        """Delete points by id; missing ids are ignored."""
        self.apply([], ids, [])

    def set_payload(self, ids: Sequence[str], payload: dict[str, Any]) -> None:
        """Merge top-level payload keys into existing points; raises PointNotFound if any id is missing."""
        self.apply([], [], [(ids, payload)])

    def apply(
        self,
        upserts: Sequence[ChunkPoint],
        delete_ids: Sequence[str],
        payload_updates: Sequence[tuple[Sequence[str], dict[str, Any]]],
    ) -> None:
        """Apply upserts, then payload updates, then deletes as one batch no in-process reader sees half of.

        An id may not be both upserted (or payload-updated) and deleted in one batch: the intent is ambiguous.
        Payload updates may target points upserted in the same batch.
        """
        spec = self._require_open()
        points = check_points(upserts, spec)
        deletes = canonical_ids(delete_ids)
        updates: PayloadUpdates = []
        for n, update in enumerate(payload_updates):
            if not isinstance(update, tuple | list) or len(update) != 2:
                raise InvalidStoreInput(f"payload update #{n} must be an (ids, payload) pair")
            ids, payload = update
            updates.append((canonical_ids(ids), check_payload(payload, f"payload update #{n}")))
        written = {p.id for p in points} | {i for ids, _ in updates for i in ids}
        clash = written.intersection(deletes)
        if clash:
            raise InvalidStoreInput(
                f"point {sorted(clash)[0]} is both written and deleted in one batch; split the batch"
            )
        if not points and not deletes and not any(ids for ids, _ in updates):
            return
        self._check_disk(f"write {len(points)} point(s)", batch_need(points),
                         deletion=not points and not any(ids for ids, _ in updates))
        with self._writing():
            self._check_exist(updates, {p.id for p in points})
            self._engine_write(points, [(ids, p) for ids, p in updates if ids], deletes)

    def delete_where(self, filter: Sequence[FieldMatch]) -> int:
        """Delete every point matching the filter; returns how many matched.

        An empty filter is refused: it would wipe every tenant, which is never what a bug-free caller means.
        """
        conditions = check_filter(filter)
        if not conditions:
            raise InvalidStoreInput(
                "delete_where needs at least one condition; to drop all data, delete the collection instead"
            )
        self._check_disk("delete points", WRITE_FLOOR_BYTES, deletion=True)
        with self._writing():
            matched = self._engine_count(conditions)
            if matched:
                self._engine_delete_where(conditions)
            return matched

    # ----------------------------------------------------------------------------------------------- reads
    def search_dense(
        self,
        vector: Sequence[float],
        filter: Sequence[FieldMatch],
        limit: int,
        score_threshold: float | None = None,
        *,
        with_payload: bool = True,
    ) -> list[ScoredPoint]:
        """Nearest points by cosine similarity, best first."""
        spec = self._require_open()
        dense = check_dense(vector, spec.dense_dim, "query vector")
        conditions, limit = check_filter(filter), check_limit(limit)
        if score_threshold is not None:
            score_threshold = float(score_threshold)
        with self._reading():
            return self._engine_search_dense(dense, conditions, limit, score_threshold, with_payload)

    def search_sparse(
        self, vector: SparseVector, filter: Sequence[FieldMatch], limit: int, *, with_payload: bool = True
    ) -> list[ScoredPoint]:
        """Best points by IDF-weighted sparse dot product; an empty query vector matches nothing."""
        spec = self._require_open()
        self._require_sparse(spec)
        sparse = check_sparse(vector, "query sparse vector")
        conditions, limit = check_filter(filter), check_limit(limit)
        if not sparse.indices:
            return []
        with self._reading():
            return self._engine_search_sparse(sparse, conditions, limit, with_payload)

    def search_hybrid(
        self, dense: Sequence[float], sparse: SparseVector, filter: Sequence[FieldMatch], limit: int,
        prefetch_limit: int, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        """Dense and sparse candidates fused by reciprocal rank fusion, best first."""
        dense_q, sparse_q, conditions, limit = self._hybrid_input(dense, sparse, filter, limit)
        prefetch_limit = check_limit(prefetch_limit, "prefetch_limit")
        with self._reading():
            # An empty sparse query scores nothing (qdrant-edge even returns zero-score filler hits), so the
            # hybrid search then degrades to ranking the dense candidates alone.
            return self._engine_search_hybrid(
                dense_q, sparse_q if sparse_q.indices else None, conditions, limit, prefetch_limit, with_payload
            )

    def search_convex(
        self, dense: Sequence[float], sparse: SparseVector, filter: Sequence[FieldMatch], limit: int,
        prefetch_limit: int, weights: ConvexWeights, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        """Dense and sparse candidates fused by a convex sum of calibrated scores in the engine, best first."""
        dense_q, sparse_q, conditions, limit = self._hybrid_input(dense, sparse, filter, limit)
        prefetch_limit = check_limit(prefetch_limit, "prefetch_limit")
        weights = check_weights(weights)
        with self._reading():
            if sparse_q.indices:
                return self._engine_search_convex(dense_q, sparse_q, conditions, limit, prefetch_limit, weights,
                                                  with_payload)
            # Nothing to match lexically: the dense list alone, scored as fusion scores it.
            hits = self._engine_search_dense(dense_q, conditions, limit, None, with_payload)
        keep = 1.0 - weights.sparse_weight
        return [ScoredPoint(h.id, keep * max(0.0, h.score), h.payload) for h in hits]

    def _hybrid_input(self, dense: Sequence[float], sparse: SparseVector, filter: Sequence[FieldMatch],
                      limit: int) -> tuple[list[float], SparseVector, Conditions, int]:
        spec = self._require_open()
        self._require_sparse(spec)
        return (check_dense(dense, spec.dense_dim, "query vector"), check_sparse(sparse, "query sparse vector"),
                check_filter(filter), check_limit(limit))

    def scroll(
        self, filter: Sequence[FieldMatch], limit: int, offset: str | None = None, with_vectors: bool = False,
        with_sparse: bool = False,
    ) -> tuple[list[StoredPoint], str | None]:
        """One page of matching points in id order and the offset of the next page (None when done)."""
        self._require_open()
        conditions, limit = check_filter(filter), check_limit(limit)
        start = canonical_id(offset) if offset is not None else None
        with self._reading():
            return self._engine_scroll(conditions, limit, start, with_vectors, with_sparse)

    def retrieve(self, ids: Sequence[str], with_vectors: bool = False, with_sparse: bool = False) -> list[StoredPoint]:
        """Existing points among ``ids``, in the order asked for."""
        self._require_open()
        wanted = canonical_ids(ids)
        if not wanted:
            return []
        with self._reading():
            found = {p.id: p for p in self._engine_retrieve(wanted, with_vectors, with_sparse)}
        return [found[i] for i in wanted if i in found]

    def count(self, filter: Sequence[FieldMatch]) -> int:
        """Exact number of points matching the filter."""
        self._require_open()
        conditions = check_filter(filter)
        with self._reading():
            return self._engine_count(conditions)

    # -------------------------------------------------------------------------------------------- helpers
    def _check_disk(self, action: str, need: int, *, deletion: bool = False) -> None:
        if self.disk is not None:
            self.disk.check_write(f"{action} in collection {self.collection!r}", need, deletion=deletion)

    def _engine_rewrite_bytes(self) -> int:
        """Bytes an optimisation may write (the engine's segments rewritten); 0 when the engine does not say."""
        return 0

    def _require_open(self) -> CollectionSpec:
        if self._closed:
            raise CollectionNotReady(f"the {self.backend} store is closed; open a new store")
        if self._spec is None:
            raise CollectionNotReady("no collection is open; call ensure_collection(spec) first")
        return self._spec

    def _require_sparse(self, spec: CollectionSpec) -> None:
        if not spec.sparse:
            raise InvalidStoreInput(f"collection {spec.name!r} was created without sparse vectors")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        with self._rw.read():
            self._require_open()  # re-check: close() may have won the race for the lock
            yield

    @contextmanager
    def _writing(self) -> Iterator[None]:
        with self._write_gate, self._rw.write():
            self._require_open()
            yield

    def _check_exist(self, updates: PayloadUpdates, upserted: set[str]) -> None:
        # Both engines refuse a payload update of a missing point, but only after earlier operations of the
        # batch ran; checking first keeps a refused batch from being half-applied.
        targets = list(dict.fromkeys(i for ids, _ in updates for i in ids if i not in upserted))
        if not targets:
            return
        present = {p.id for p in self._engine_retrieve(targets, False)}
        missing = [i for i in targets if i not in present]
        if missing:
            raise PointNotFound(
                f"cannot update payload of {len(missing)} missing point(s), e.g. {missing[0]}; nothing was written"
            )
