"""Copy collections between store engines (embedded engine <-> Qdrant server) without re-embedding.

Points keep their ids, vectors (dense and sparse) and payloads byte for byte: sealed fields stay sealed, so the
target Freki needs the same key store (``gdpr.keys_path``). The copy is an idempotent upsert in id order;
a copy that was killed is finished by running it again with ``resume``. Writers must be stopped while it
runs (the embedded engine's lock enforces that for an embedded source).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from freki.store.base import ChunkPoint, CollectionSpec
from freki.store.edge import EdgeStore
from freki.store.edge_layout import CollectionPaths, read_registry
from freki.store.errors import StoreError
from freki.store.guarded import GuardedStore
from freki.store.remote import RemoteStore


@dataclass(frozen=True)
class CopyReport:
    """What one collection's copy did."""

    collection: str
    points: int
    seconds: float


def recorded_spec(store: GuardedStore, name: str) -> CollectionSpec | None:
    """The spec an existing collection was created with, or None when there is no such collection."""
    if isinstance(store, EdgeStore):
        paths = CollectionPaths(store.data_dir / name)
        if not paths.registry.exists():
            return None
        record = read_registry(paths)
    elif isinstance(store, RemoteStore):
        if not store.has_collection(name):
            return None
        record = store.recorded(name)
    else:
        raise StoreError(f"cannot read the collection spec of a {type(store).__name__}")
    model, dim = record.get("embedding_model"), record.get("dense_dim")
    if not isinstance(model, str) or not isinstance(dim, int):
        raise StoreError(f"collection {name!r} is not a Freki collection (recorded: {record})")
    return CollectionSpec(name=name, dense_dim=dim, embedding_model=model, sparse=bool(record.get("sparse")))


def copy_collection(
    source: GuardedStore, target: GuardedStore, spec: CollectionSpec, *, target_name: str | None = None,
    batch: int = 256, resume: bool = False, progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy every point of ``spec.name`` in ``source`` into ``target_name`` (default the same) in ``target``.

    Raises:
        StoreError: the target already holds points and ``resume`` is False, or the counts differ at the end.
        EmbeddingModelMismatch: the target collection exists with another model or size.
    """
    started = time.perf_counter()
    source.ensure_collection(spec)
    target_spec = CollectionSpec(target_name or spec.name, spec.dense_dim, spec.embedding_model, spec.sparse)
    target.ensure_collection(target_spec)
    present = target.count([])
    if present and not resume:
        raise StoreError(
            f"target collection {target_spec.name!r} already holds {present:,} points; pass resume to finish an "
            "interrupted copy, or choose an empty collection"
        )
    copied, offset = 0, None
    while True:
        page, offset = source.scroll([], batch, offset, with_vectors=True, with_sparse=True)
        if page:
            target.upsert([ChunkPoint(p.id, p.dense or [], p.sparse, p.payload) for p in page])
            copied += len(page)
            if progress is not None:
                progress(copied)
        if offset is None:
            break
    expected, landed = source.count([]), target.count([])
    if landed != expected:
        raise StoreError(
            f"copy of {spec.name!r} ended with {landed:,} points in the target but {expected:,} in the source "
            "(was something writing either one?)"
        )
    return CopyReport(target_spec.name, copied, time.perf_counter() - started)
