"""Freki's vector store layer: one ``VectorStore`` interface, two Qdrant engines, picked by ``make_store``.

* ``EdgeStore`` (backend ``"edge"``, the default): Qdrant's engine in-process (qdrant-edge-py), persistent
  under a data dir; one process per data dir.
* ``RemoteStore`` (backend ``"remote"``): a Qdrant server via qdrant-client, or qdrant-client's local mode.

Typical use::

    store = make_store(StoreConfig(backend="edge", data_dir="/var/lib/freki"))
    store.ensure_collection(CollectionSpec("chunks", dense_dim=384, embedding_model="all-MiniLM-L6-v2"))
    store.apply(new_chunks, old_chunk_ids, [])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from freki.store.base import (
    ChunkPoint,
    CollectionSpec,
    ConvexWeights,
    FieldMatch,
    Filter,
    NumericRange,
    ScoredPoint,
    SparseVector,
    StoredPoint,
    VectorStore,
    scroll_pages,
)
from freki.store.disk import DiskWatermarks
from freki.store.edge import EdgeStore
from freki.store.errors import (
    CollectionNotReady,
    EmbeddingModelMismatch,
    InvalidStoreInput,
    PointNotFound,
    StoreError,
    StoreUnavailable,
)
from freki.store.remote import RemoteStore

__all__ = [
    "ChunkPoint",
    "CollectionNotReady",
    "CollectionSpec",
    "EdgeStore",
    "EmbeddingModelMismatch",
    "FieldMatch",
    "Filter",
    "InvalidStoreInput",
    "NumericRange",
    "PointNotFound",
    "RemoteStore",
    "ConvexWeights",
    "ScoredPoint",
    "SparseVector",
    "StoreConfig",
    "StoreError",
    "StoreUnavailable",
    "StoredPoint",
    "VectorStore",
    "scroll_pages",
    "make_store",
]


@dataclass(frozen=True)
class StoreConfig:
    """Plain settings for ``make_store``; the service's Settings class maps onto these fields.

    Attributes:
        backend: ``"edge"`` (embedded engine) or ``"remote"`` (Qdrant server / qdrant-client local mode).
        data_dir: Edge only: directory holding one sub-directory per collection.
        url: Remote only: Qdrant server URL, e.g. ``http://localhost:6333``.
        api_key: Remote only: server API key.
        timeout_s: Remote only: per-request timeout in seconds.
        prefer_grpc: Remote only: use gRPC (port 6334) instead of REST.
        location: Remote only: ``":memory:"`` for qdrant-client local mode (tests).
        path: Remote only: directory for qdrant-client on-disk local mode (tests).
        rrf_k: Rank constant of reciprocal rank fusion in hybrid search (both backends).
        flush_writes: Edge only: flush segments after every write batch (survives power loss). False keeps
            only the write-ahead log, which survives a killed process and makes small writes far cheaper.
        search_threads: Edge only: threads searching one query's segments; 1 searches on the calling
            thread (see ``EdgeStore``). Recorded with the shard.
    """

    backend: Literal["edge", "remote"] = "edge"
    data_dir: str | Path | None = None
    url: str | None = None
    api_key: str | None = None
    timeout_s: float = 10.0
    prefer_grpc: bool = False
    location: str | None = None
    path: str | None = None
    rrf_k: int = 60
    flush_writes: bool = True
    search_threads: int = 1
    disk: DiskWatermarks | None = field(default=None, compare=False)


def _require_positive_int(name: str, value: object) -> None:
    # bool is an int subclass, but True is no count.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidStoreInput(f"{name} must be a positive integer (got {value!r})")


def make_store(config: StoreConfig) -> VectorStore:
    """Build the store ``config.backend`` names; call ``ensure_collection`` on it before use.

    Raises:
        InvalidStoreInput: the backend is unknown or its required settings are missing.
    """
    _require_positive_int("rrf_k", config.rrf_k)
    if config.backend == "edge":
        if not config.data_dir:
            raise InvalidStoreInput("the edge store needs data_dir (a directory for its collections)")
        if config.url or config.location or config.path:
            raise InvalidStoreInput("url/location/path are remote-store settings; set backend='remote' to use them")
        _require_positive_int("search_threads", config.search_threads)
        store = EdgeStore(config.data_dir, rrf_k=config.rrf_k, flush_writes=config.flush_writes,
                          search_threads=config.search_threads)
        store.disk = config.disk
        return store
    if config.backend == "remote":
        given = [n for n, v in (("url", config.url), ("location", config.location), ("path", config.path)) if v]
        if len(given) != 1:
            raise InvalidStoreInput(
                f"the remote store needs exactly one of url, location=':memory:' or path (got {given or 'none'})"
            )
        if config.timeout_s <= 0:
            raise InvalidStoreInput(f"timeout_s must be positive (got {config.timeout_s!r})")
        return RemoteStore(
            url=config.url,
            api_key=config.api_key,
            timeout_s=config.timeout_s,
            prefer_grpc=config.prefer_grpc,
            location=config.location,
            path=config.path,
            rrf_k=config.rrf_k,
        )
    raise InvalidStoreInput(f"unknown store backend {config.backend!r}; use 'edge' or 'remote'")
