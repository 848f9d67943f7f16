"""``EdgeStore``: the Qdrant engine in-process via qdrant-edge-py, persistent under a data dir.

One ``EdgeShard`` per collection (layout in ``edge_layout``). Durability: every operation goes to the
engine's write-ahead log before ``update`` returns and the WAL is replayed on open, so ``kill -9`` loses
nothing acknowledged (``tests/freki/store/test_edge.py``); ``flush_writes=True`` also flushes each batch to
the segments (survives power loss, at a cost per batch: docs/decisions/0009-edge-durability-and-purge.md).
``purge`` removes deleted data from segments and WAL (``edge_purge``).

Searches run on the calling thread by default (``search_threads=1``): qdrant-edge holds the GIL for a whole
``query`` call, so a caller waiting there for pool threads would stall every other Python thread whenever the
encoder has the cores (docs/decisions/0005-search-threads.md).

If the engine fails part-way through a batch, the points it touched are put back (before-image rollback).
A ``kill -9`` mid-batch can leave it partly applied; Freki's start-up consistency pass
(``freki.ingest.repair``) removes what no committed document owns.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast

import qdrant_edge as qe

from freki.store import edge_queries as queries
from freki.store.base import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    ChunkPoint,
    CollectionSpec,
    ConvexWeights,
    FieldMatch,
    ScoredPoint,
    SparseVector,
    StoredPoint,
    stored_point,
    vector_selector,
)
from freki.store.edge_config import ensure_indexes, shard_config
from freki.store.edge_layout import CollectionPaths, acquire_lock, read_registry, release_lock, write_registry
from freki.store.edge_purge import PURGE_PADDING_ID, purge_shard
from freki.store.errors import StoreError, StoreUnavailable
from freki.store.filters import edge_filter
from freki.store.guarded import Conditions, GuardedStore, PayloadUpdates
from freki.store.validation import check_filter, check_recorded_spec

log = logging.getLogger(__name__)


def _ids(ids: list[str]) -> list[qe.PointId]:
    """Widen str ids to the engine's PointId type (the stub's list is invariant)."""
    return cast("list[qe.PointId]", ids)


def _engine_error(exc: Exception, action: str) -> StoreError:
    text = str(exc)
    if "WouldBlock" in text:
        return StoreUnavailable(f"cannot {action}: the shard is in use by another process ({text})")
    return StoreError(f"qdrant-edge failed to {action}: {text}")


class EdgeStore(GuardedStore):
    """Embedded Qdrant store; one process per data dir. See the module docstring."""

    backend = "edge"

    def __init__(
        self, data_dir: str | Path, rrf_k: int = 60, flush_writes: bool = True, search_threads: int = 1
    ) -> None:
        """Prepare a store under ``data_dir``; the collection is opened by ``ensure_collection``.

        Args:
            data_dir: Directory holding one sub-directory per collection; created if missing.
            rrf_k: Rank constant of reciprocal rank fusion in hybrid search.
            flush_writes: Flush segments after every write batch (survives power loss); False relies on the
                WAL alone (survives a killed process, much faster writes).
            search_threads: Threads searching one query's segments: 1 searches on the calling thread (see the
                module docstring); more run the engine's pool. The engine records it with the shard.
        """
        super().__init__()
        self.data_dir = Path(data_dir)
        self.rrf_k = rrf_k
        self.flush_writes = flush_writes
        self.search_threads = search_threads
        self._shard: qe.EdgeShard | None = None
        self._lock_file: IO[bytes] | None = None

    # ------------------------------------------------------------------------------------------ lifecycle
    def _engine_open(self, spec: CollectionSpec) -> None:
        if self._shard is not None:  # already open: only re-check the request against the registry
            check_recorded_spec(read_registry(self._paths(spec)), spec, f"data dir {self.data_dir}")
            return
        paths = self._paths(spec)
        lock = acquire_lock(paths, self.data_dir)
        try:
            self._shard = self._open_shard(paths, spec)
            try:
                ensure_indexes(self._shard, spec, self.disk)
                # A purge killed half-way leaves its padding point behind. Looked up first: an open writes
                # nothing it need not (the disk may be full, docs/decisions/0221-disk-and-integrity.md).
                if self._shard.retrieve(_ids([PURGE_PADDING_ID]), with_payload=False, with_vector=False):
                    self._shard.update(qe.UpdateOperation.delete_points(_ids([PURGE_PADDING_ID])))
            except StoreError:
                raise
            except Exception as exc:
                raise _engine_error(exc, f"create the payload indexes of collection {spec.name!r}") from exc
        except BaseException:
            if self._shard is not None:
                self._shard.close()
                self._shard = None
            release_lock(lock)
            raise
        self._lock_file = lock

    def _paths(self, spec: CollectionSpec) -> CollectionPaths:
        return CollectionPaths(self.data_dir / spec.name)

    def _open_shard(self, paths: CollectionPaths, spec: CollectionSpec) -> qe.EdgeShard:
        where = f"data dir {self.data_dir}"
        if not paths.shard_exists() and self.disk is not None:
            self.disk.check_write(f"create collection {spec.name!r}")
        if paths.registry.exists():
            check_recorded_spec(read_registry(paths), spec, where)
        elif paths.shard_exists():
            raise StoreError(
                f"collection {spec.name!r} in {where} has a shard but no collection.json, so its embedding "
                "model is unknown; re-index into a new collection or restore collection.json"
            )
        else:
            write_registry(paths, spec)
        config = shard_config(spec, self.search_threads)
        try:
            if paths.shard_exists():
                return qe.EdgeShard.load(str(paths.shard), config)
            return qe.EdgeShard.create(str(paths.shard), config)
        except Exception as exc:
            raise _engine_error(exc, f"open collection {spec.name!r} in {where}") from exc

    def _engine_rewrite_bytes(self) -> int:
        spec = self._spec
        if spec is None:
            return 0
        segments = self._paths(spec).shard / "segments"
        return sum(f.stat().st_blocks * 512 for f in segments.rglob("*") if f.is_file())

    def _engine_optimize(self) -> None:
        try:
            self._require_shard().optimize()
            self._require_shard().flush()
        except Exception as exc:
            raise _engine_error(exc, self._where("optimize")) from exc

    def _engine_purge(self) -> bool:
        spec = self._spec
        assert spec is not None
        try:  # optimize() already rewrote the segments (GuardedStore.purge); this rolls the WAL over
            purge_shard(self._require_shard(), self._paths(spec).shard / "wal", spec.dense_dim)
        except StoreError:
            raise
        except Exception as exc:
            raise _engine_error(exc, self._where("purge deleted data from its files")) from exc
        return True

    def _engine_value_counts(self, key: str, conditions: Conditions) -> dict[str, int]:
        request = qe.FacetRequest(key, limit=max(1, self._engine_count(conditions)), exact=True,
                                  filter=edge_filter(conditions))
        try:
            hits = self._require_shard().facet(request).hits  # values whose points are all deleted count 0
            return {str(hit.value): int(hit.count) for hit in hits if hit.count > 0}
        except Exception as exc:
            raise _engine_error(exc, self._where(f"count values of {key!r}")) from exc

    def _engine_close(self) -> None:
        try:
            if self._shard is not None:
                self._shard.flush()
                self._shard.close()
        finally:
            self._shard = None
            if self._lock_file is not None:
                release_lock(self._lock_file)
                self._lock_file = None

    def _where(self, action: str) -> str:
        """``action`` naming the collection and its files, so an engine error says where it happened."""
        spec = self._spec
        return f"{action} in collection {spec.name!r} ({self._paths(spec).shard})" if spec else action

    def ids_page(self, offset: str | None, limit: int, filter: Sequence[FieldMatch] = ()) -> tuple[
        list[str], str | None
    ]:
        """One page of matching point ids in id order, reading no payload or vector (the integrity scrub lists
        a collection with it: a point whose payload the engine cannot decode fails every read that loads it)."""
        conditions = check_filter(filter)
        with self._reading():
            request = qe.ScrollRequest(offset=offset, limit=limit, filter=edge_filter(conditions),
                                       with_payload=False, with_vector=False)
            try:
                records, next_offset = self._require_shard().scroll(request)
            except Exception as exc:
                raise _engine_error(exc, self._where("list point ids")) from exc
        return [str(r.id) for r in records], (str(next_offset) if next_offset is not None else None)

    def _require_shard(self) -> qe.EdgeShard:
        if self._shard is None:
            raise StoreError("edge shard is not open")
        return self._shard

    # --------------------------------------------------------------------------------------------- writes
    def _engine_write(self, upserts: list[ChunkPoint], updates: PayloadUpdates, deletes: list[str]) -> None:
        shard = self._require_shard()
        touched = list(dict.fromkeys([p.id for p in upserts] + [i for ids, _ in updates for i in ids] + deletes))
        before = shard.retrieve(_ids(touched), with_payload=True, with_vector=True)
        try:
            if upserts:
                shard.update(qe.UpdateOperation.upsert_points([self._point(p) for p in upserts]))
            for ids, payload in updates:
                shard.update(qe.UpdateOperation.set_payload(_ids(ids), payload))
            if deletes:
                shard.update(qe.UpdateOperation.delete_points(_ids(deletes)))
            if self.flush_writes:
                shard.flush()
        except Exception as exc:
            self._rollback(shard, touched, before)
            raise _engine_error(exc, self._where("write the batch (it was rolled back)")) from exc

    @staticmethod
    def _rollback(shard: qe.EdgeShard, touched: list[str], before: list[qe.Record]) -> None:
        try:
            shard.update(qe.UpdateOperation.delete_points(_ids(touched)))
            if before:
                shard.update(
                    qe.UpdateOperation.upsert_points([qe.Point(r.id, r.vector or {}, r.payload or {}) for r in before])
                )
            shard.flush()
        except Exception:
            log.exception("rollback of a failed write batch failed; %d points may be inconsistent", len(touched))

    @staticmethod
    def _point(point: ChunkPoint) -> qe.Point:
        vector: dict[str, Any] = {DENSE_VECTOR: list(point.dense)}
        if point.sparse is not None:
            vector[SPARSE_VECTOR] = qe.SparseVector(point.sparse.indices, point.sparse.values)
        return qe.Point(point.id, vector, point.payload)

    def _engine_delete_where(self, conditions: Conditions) -> None:
        shard = self._require_shard()
        try:
            shard.update(qe.UpdateOperation.delete_points_by_filter(edge_filter(conditions) or qe.Filter()))
            if self.flush_writes:
                shard.flush()
        except Exception as exc:
            raise _engine_error(exc, self._where("delete points by filter")) from exc

    # ---------------------------------------------------------------------------------------------- reads
    def _query(self, request: qe.QueryRequest, action: str) -> list[ScoredPoint]:
        try:
            hits = self._require_shard().query(request)
        except Exception as exc:
            raise _engine_error(exc, self._where(action)) from exc
        return [ScoredPoint(str(h.id), float(h.score), dict(h.payload or {})) for h in hits]

    def _engine_search_dense(
        self, vector: list[float], conditions: Conditions, limit: int, score_threshold: float | None,
        with_payload: bool,
    ) -> list[ScoredPoint]:
        request = queries.dense(vector, edge_filter(conditions), limit, with_payload, score_threshold)
        return self._query(request, "run a dense search")

    def _engine_search_sparse(
        self, vector: SparseVector, conditions: Conditions, limit: int, with_payload: bool
    ) -> list[ScoredPoint]:
        return self._query(queries.sparse(vector, edge_filter(conditions), limit, with_payload), "run a sparse search")

    def _engine_search_hybrid(
        self, dense: list[float], sparse: SparseVector | None, conditions: Conditions, limit: int,
        prefetch_limit: int, with_payload: bool,
    ) -> list[ScoredPoint]:
        request = queries.rrf(dense, sparse, edge_filter(conditions), limit, prefetch_limit, self.rrf_k, with_payload)
        return self._query(request, "run a hybrid search")

    def _engine_search_convex(
        self, dense: list[float], sparse: SparseVector, conditions: Conditions, limit: int, prefetch_limit: int,
        weights: ConvexWeights, with_payload: bool,
    ) -> list[ScoredPoint]:
        request = queries.convex(dense, sparse, edge_filter(conditions), limit, prefetch_limit, weights, with_payload)
        return self._query(request, "run a hybrid search")

    def _engine_scroll(
        self, conditions: Conditions, limit: int, offset: str | None, with_vectors: bool, with_sparse: bool
    ) -> tuple[list[StoredPoint], str | None]:
        request = qe.ScrollRequest(offset=offset, limit=limit, filter=edge_filter(conditions), with_payload=True,
                                   with_vector=vector_selector(with_vectors, with_sparse))
        try:
            records, next_offset = self._require_shard().scroll(request)
        except Exception as exc:
            raise _engine_error(exc, self._where("scroll points")) from exc
        return [stored_point(r, with_vectors or with_sparse) for r in records], (
            str(next_offset) if next_offset is not None else None)

    def _engine_retrieve(self, ids: list[str], with_vectors: bool, with_sparse: bool = False) -> list[StoredPoint]:
        try:
            records = self._require_shard().retrieve(_ids(ids), with_payload=True,
                                                     with_vector=vector_selector(with_vectors, with_sparse))
        except Exception as exc:
            raise _engine_error(exc, self._where("retrieve points")) from exc
        return [stored_point(r, with_vectors or with_sparse) for r in records]

    def _engine_count(self, conditions: Conditions) -> int:
        try:
            return int(self._require_shard().count(qe.CountRequest(exact=True, filter=edge_filter(conditions))))
        except Exception as exc:
            raise _engine_error(exc, self._where("count points")) from exc
