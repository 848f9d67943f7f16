"""``RemoteStore``: a Qdrant server through qdrant-client (or qdrant-client's local mode, used by the tests).

The collection's embedding model and dense size are kept in Qdrant's collection metadata. A write batch is
one ``batch_update_points`` request with ``wait=True``; a readers-writer lock keeps this process's readers
from seeing half of it. Limits: the server applies a batch's operations one after another, so *other*
processes (a second Freki replica) can observe intermediate states, and a batch that fails part-way on the
server is not rolled back (input is validated up front). ``optimize`` is a no-op: a server builds its
indexes in the background.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Iterator
from typing import Any

import grpc
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from freki.store import local_clients
from freki.store import remote_queries as queries
from freki.store.base import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    ChunkPoint,
    CollectionSpec,
    ConvexWeights,
    ScoredPoint,
    SparseVector,
    StoredPoint,
    payload_indexes,
    stored_point,
    vector_selector,
)
from freki.store.errors import StoreError, StoreUnavailable
from freki.store.filters import remote_filter
from freki.store.guarded import Conditions, GuardedStore, PayloadUpdates
from freki.store.validation import check_recorded_spec

METADATA_FORMAT = 1
_UNAVAILABLE_GRPC = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


class RemoteStore(GuardedStore):
    """Qdrant-server store; several processes may share one server. See the module docstring."""

    backend = "remote"

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        prefer_grpc: bool = False,
        location: str | None = None,
        path: str | None = None,
        rrf_k: int = 60,
    ) -> None:
        """Connect lazily to a Qdrant server at ``url``, or use qdrant-client local mode.

        Args:
            url: Server URL, e.g. ``http://localhost:6333``.
            api_key: Server API key, if it requires one.
            timeout_s: Per-request timeout in seconds (qdrant-client takes whole seconds; rounded up).
            prefer_grpc: Talk gRPC (port 6334) instead of REST.
            location: ``":memory:"`` for qdrant-client's in-memory local mode (tests only).
            path: Directory for qdrant-client's on-disk local mode (tests only; brute-force search).
            rrf_k: Rank constant of reciprocal rank fusion in hybrid search.
        """
        super().__init__()
        if sum(x is not None for x in (url, location, path)) != 1:
            raise StoreError("RemoteStore needs exactly one of url, location=':memory:' or path")
        self.target = url or location or path or ""
        self.rrf_k = rrf_k
        self._local, self._path = url is None, path
        try:
            make = functools.partial(
                QdrantClient, url=url, api_key=api_key, timeout=max(1, math.ceil(timeout_s)),
                prefer_grpc=prefer_grpc, location=location, path=path,
                # on-disk local mode keeps a sqlite handle; our locks serialise its use across threads
                force_disable_check_same_thread=path is not None,
                # the version probe is a blocking request at construction; connect lazily instead
                check_compatibility=False,
            )
            # qdrant-client's local mode is plain Python state, not built for concurrent calls: serialise them.
            self._local_mutex: contextlib.AbstractContextManager[Any] = (
                threading.Lock() if self._local else contextlib.nullcontext()
            )
            if path is None:
                self._client = make()
            else:  # one client per directory in a process (local_clients)
                self._client, self._local_mutex = local_clients.acquire(path, make)
        except Exception as exc:
            raise StoreUnavailable(f"cannot open Qdrant at {self.target}: {exc}") from exc
        self._name = ""

    @contextlib.contextmanager
    def _calling(self, action: str) -> Iterator[None]:
        """Run one client call, turning client and transport errors into store errors."""
        try:
            with self._local_mutex:
                yield
        except StoreError:
            raise
        except ResponseHandlingException as exc:
            raise StoreUnavailable(
                f"Qdrant at {self.target} did not answer while trying to {action}: "
                f"{exc.source}; check that the server is up"
            ) from exc
        except UnexpectedResponse as exc:
            detail = exc.content.decode("utf-8", "replace")[:500]
            error = StoreUnavailable if (exc.status_code or 500) >= 500 else StoreError
            raise error(f"Qdrant at {self.target} refused to {action}: HTTP {exc.status_code} {detail}") from exc
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            error = StoreUnavailable if code in _UNAVAILABLE_GRPC else StoreError
            raise error(f"Qdrant at {self.target} failed to {action}: {exc}") from exc
        except (ConnectionError, TimeoutError) as exc:
            raise StoreUnavailable(f"Qdrant at {self.target} is unreachable ({action}): {exc}") from exc
        except Exception as exc:
            raise StoreError(f"Qdrant failed to {action}: {exc}") from exc

    # ------------------------------------------------------------------------------------------ lifecycle
    def _engine_open(self, spec: CollectionSpec) -> None:
        where = f"Qdrant at {self.target}"
        with self._calling(f"open collection {spec.name!r}"):
            if not self._client.collection_exists(spec.name):
                try:
                    self._create(spec)
                except UnexpectedResponse as exc:
                    if exc.status_code != 409:  # 409: another replica created it first; verify theirs below
                        raise
            check_recorded_spec(self.recorded(spec.name), spec, where)
            self._ensure_indexes(spec)
        self._name = spec.name

    def _ensure_indexes(self, spec: CollectionSpec) -> None:
        # Checked on every open so a crash between creating the collection and its indexes heals itself.
        # Local mode ignores payload indexes (and warns about them); a server needs them for fast filters.
        if self._local:
            return
        existing = set(self._client.get_collection(spec.name).payload_schema or {})
        schema = {"keyword": models.PayloadSchemaType.KEYWORD, "float": models.PayloadSchemaType.FLOAT}
        for field, kind in payload_indexes(spec).items():
            if field not in existing:
                self._client.create_payload_index(spec.name, field, schema[kind], wait=True)

    def _create(self, spec: CollectionSpec) -> None:
        sparse = {SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)} if spec.sparse else None
        self._client.create_collection(
            spec.name,
            vectors_config={DENSE_VECTOR: models.VectorParams(size=spec.dense_dim, distance=models.Distance.COSINE)},
            sparse_vectors_config=sparse,
            metadata={
                "format": METADATA_FORMAT,
                "embedding_model": spec.embedding_model,
                "dense_dim": spec.dense_dim,
                "sparse": spec.sparse,
            },
        )

    def has_collection(self, name: str) -> bool:
        with self._calling(f"look up collection {name!r}"):
            return bool(self._client.collection_exists(name))

    def drop_collection(self, name: str) -> None:
        """Delete collection ``name`` and its points (a restore replacing it; never used while serving)."""
        with self._calling(f"delete collection {name!r}"):
            self._client.delete_collection(name)

    def recorded(self, name: str) -> dict[str, object]:
        """What the server recorded of collection ``name``: model, dense size, sparse flag."""
        config = self._client.get_collection(name).config
        meta = dict(config.metadata or {})
        vectors = config.params.vectors
        dense = vectors.get(DENSE_VECTOR) if isinstance(vectors, dict) else None
        if dense is None:
            return {"embedding_model": "<not a Freki collection: no 'dense' vector>", "dense_dim": None}
        return {
            "embedding_model": meta.get("embedding_model", "<not recorded>"),
            "dense_dim": dense.size,
            "sparse": SPARSE_VECTOR in (config.params.sparse_vectors or {}),
        }

    def _engine_optimize(self) -> None:
        return None  # a Qdrant server runs its optimisers in the background

    def _engine_purge(self) -> bool:
        return False  # a server vacuums deleted points and truncates its WAL on its own schedule

    def _engine_value_counts(self, key: str, conditions: Conditions) -> dict[str, int]:
        # Scrolling the one field works in qdrant-client's local mode too, where facets are limited.
        counts: dict[str, int] = {}
        offset: Any = None
        while True:
            with self._calling("count values"):
                records, offset = self._client.scroll(
                    self._name, scroll_filter=remote_filter(conditions), limit=1024, offset=offset,
                    with_payload=models.PayloadSelectorInclude(include=[key]), with_vectors=False,
                )
            for record in records:
                value = (record.payload or {}).get(key)
                if value is not None:
                    counts[str(value)] = counts.get(str(value), 0) + 1
            if offset is None:
                return counts

    def _engine_close(self) -> None:
        if self._path is not None:
            local_clients.release(self._path)
            return
        with self._calling("close the client"):
            self._client.close()

    # --------------------------------------------------------------------------------------------- writes
    def _engine_write(self, upserts: list[ChunkPoint], updates: PayloadUpdates, deletes: list[str]) -> None:
        operations: list[Any] = []
        if upserts:
            operations.append(
                models.UpsertOperation(upsert=models.PointsList(points=[self._point(p) for p in upserts]))
            )
        for ids, payload in updates:
            operations.append(
                models.SetPayloadOperation(set_payload=models.SetPayload(payload=payload, points=list(ids)))
            )
        if deletes:
            operations.append(models.DeleteOperation(delete=models.PointIdsList(points=list(deletes))))
        with self._calling("write the batch"):
            self._client.batch_update_points(self._name, operations, wait=True)

    @staticmethod
    def _point(point: ChunkPoint) -> models.PointStruct:
        vector: dict[str, Any] = {DENSE_VECTOR: list(point.dense)}
        if point.sparse is not None:
            vector[SPARSE_VECTOR] = models.SparseVector(indices=point.sparse.indices, values=point.sparse.values)
        return models.PointStruct(id=point.id, vector=vector, payload=point.payload)

    def _engine_delete_where(self, conditions: Conditions) -> None:
        selector = models.FilterSelector(filter=remote_filter(conditions) or models.Filter())
        with self._calling("delete points by filter"):
            self._client.delete(self._name, points_selector=selector, wait=True)

    # ---------------------------------------------------------------------------------------------- reads
    def _run(self, action: str, requests: list[models.QueryRequest]) -> list[list[ScoredPoint]]:
        with self._calling(action):
            responses = self._client.query_batch_points(self._name, requests)
        return [[ScoredPoint(str(h.id), float(h.score), dict(h.payload or {})) for h in r.points] for r in responses]

    def _engine_search_dense(
        self, vector: list[float], conditions: Conditions, limit: int, score_threshold: float | None,
        with_payload: bool,
    ) -> list[ScoredPoint]:
        request = queries.dense(vector, remote_filter(conditions), limit, with_payload, score_threshold)
        return self._run("run a dense search", [request])[0]

    def _engine_search_sparse(
        self, vector: SparseVector, conditions: Conditions, limit: int, with_payload: bool
    ) -> list[ScoredPoint]:
        return self._run("run a sparse search", [queries.sparse(vector, remote_filter(conditions), limit,
                                                                 with_payload)])[0]

    def _engine_search_hybrid(
        self, dense: list[float], sparse: SparseVector | None, conditions: Conditions, limit: int,
        prefetch_limit: int, with_payload: bool,
    ) -> list[ScoredPoint]:
        request = queries.rrf(dense, sparse, remote_filter(conditions), limit, prefetch_limit, self.rrf_k,
                              with_payload)
        return self._run("run a hybrid search", [request])[0]

    def _engine_search_convex(
        self, dense: list[float], sparse: SparseVector, conditions: Conditions, limit: int, prefetch_limit: int,
        weights: ConvexWeights, with_payload: bool,
    ) -> list[ScoredPoint]:
        request = queries.convex(dense, sparse, remote_filter(conditions), limit, prefetch_limit, weights,
                                 with_payload)
        return self._run("run a hybrid search", [request])[0]

    def _engine_scroll(
        self, conditions: Conditions, limit: int, offset: str | None, with_vectors: bool, with_sparse: bool
    ) -> tuple[list[StoredPoint], str | None]:
        with self._calling("scroll points"):
            records, next_offset = self._client.scroll(
                self._name,
                scroll_filter=remote_filter(conditions),
                limit=limit,
                offset=offset,
                with_payload=True,
                with_vectors=vector_selector(with_vectors, with_sparse),
            )
        return [stored_point(r, with_vectors or with_sparse) for r in records], (
            str(next_offset) if next_offset is not None else None)

    def _engine_retrieve(self, ids: list[str], with_vectors: bool, with_sparse: bool = False) -> list[StoredPoint]:
        with self._calling("retrieve points"):
            records = self._client.retrieve(self._name, ids, with_payload=True,
                                            with_vectors=vector_selector(with_vectors, with_sparse))
        return [stored_point(r, with_vectors or with_sparse) for r in records]

    def _engine_count(self, conditions: Conditions) -> int:
        with self._calling("count points"):
            return int(self._client.count(self._name, count_filter=remote_filter(conditions), exact=True).count)
