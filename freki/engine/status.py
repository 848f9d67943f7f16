"""What GetIndexStatus reports of the engine."""

from __future__ import annotations

from dataclasses import dataclass

from freki.engine.blue_green import MigrationStatus
from freki.engine.models import ModelStatus
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
