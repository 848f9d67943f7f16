"""How ``EdgeStore`` configures a shard: its vectors and optimisers, and the payload indexes it must have."""

from __future__ import annotations

import logging

import qdrant_edge as qe

from freki.store.base import DENSE_VECTOR, SPARSE_VECTOR, CollectionSpec, payload_indexes
from freki.store.disk import DiskWatermarks
from freki.store.errors import DiskFull

log = logging.getLogger("freki.store.edge")
_SCHEMA = {"keyword": qe.PayloadSchemaType.Keyword, "float": qe.PayloadSchemaType.Float}


def shard_config(spec: CollectionSpec, search_threads: int) -> qe.EdgeConfig:
    """The engine config of a shard for ``spec``; ``search_threads`` as ``EdgeStore`` documents it."""
    sparse = {SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)} if spec.sparse else None
    return qe.EdgeConfig(
        vectors={DENSE_VECTOR: qe.EdgeVectorParams(size=spec.dense_dim, distance=qe.Distance.Cosine)},
        sparse_vectors=sparse,
        max_search_threads=search_threads,
        # optimize() (called by purge and maintenance only) then rewrites every segment holding a deleted
        # point: the engine's defaults leave segments under 20 % deleted or 1,000 points as they are, with
        # the deleted payloads still in their files.
        optimizers=qe.EdgeOptimizersConfig(deleted_threshold=1e-9, vacuum_min_vector_number=1),
    )


def ensure_indexes(shard: qe.EdgeShard, spec: CollectionSpec, disk: DiskWatermarks | None) -> None:
    """Create the payload indexes ``spec`` needs that the shard lacks (one is put off on a full disk)."""
    # Checked on every open, so a crash between creating the shard and its indexes heals itself.
    existing = set(shard.info().payload_schema)
    for name, kind in payload_indexes(spec).items():
        if name not in existing:
            if disk is not None:
                try:
                    disk.check_write(f"create payload index {name!r} of collection {spec.name!r}")
                except DiskFull as exc:  # filters work without it, only slower; made at a start with room
                    log.warning("%s", exc)
                    continue
            shard.update(qe.UpdateOperation.create_field_index(name, _SCHEMA[kind]))
    shard.flush()
