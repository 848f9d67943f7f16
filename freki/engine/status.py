"""What GetIndexStatus reports of the engine."""

from __future__ import annotations

from dataclasses import dataclass

from freki.engine import models
from freki.engine.blue_green import MigrationStatus
from freki.engine.index_set import IndexSet, embedding_config
from freki.engine.models import ModelStatus
from freki.settings import FrekiSettings
from freki.store.disk import DiskState
from freki.store.integrity import QuarantinedChunk


@dataclass(frozen=True)
class EngineStatus:
    """Counts and configuration reported by GetIndexStatus."""

    document_count: int
    chunk_count: int
    embedding_model: str
    embedding_dimension: int
    store_backend: str
    collection: str
    models: tuple[ModelStatus, ...] = ()
    configured_model: str = ""
    migration: MigrationStatus | None = None
    disk: DiskState | None = None
    # ("ok" | "degraded", reasons): freki.engine.health
    health: tuple[str, tuple[str, ...]] = ("ok", ())
    quarantined: tuple[QuarantinedChunk, ...] = ()


def engine_status(index: IndexSet, settings: FrekiSettings, migration: MigrationStatus | None, tenant: str | None,
                  *, disk: DiskState | None = None, health: tuple[str, tuple[str, ...]] = ("ok", ()),
                  quarantined: tuple[QuarantinedChunk, ...] = ()) -> EngineStatus:
    """The status of the serving ``index`` for one tenant (or all), with the disk and integrity health."""
    statuses = models.model_statuses(index.configured_layout, index.embedder, index.chunks, index.lanes,
                                     index.registry, tenant)
    return EngineStatus(
        document_count=index.registry.count(tenant),
        chunk_count=sum(m.chunk_count for m in statuses),
        embedding_model=index.embedder.identity.name,
        embedding_dimension=index.embedder.dimension,
        store_backend=index.chunks.backend,
        collection=index.names.chunks,
        configured_model=embedding_config(settings),
        migration=migration,
        models=tuple(statuses),
        disk=disk,
        health=health,
        quarantined=quarantined,
    )
