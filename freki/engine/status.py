"""What GetIndexStatus reports of the engine."""

from __future__ import annotations

from dataclasses import dataclass

from freki.engine.blue_green import MigrationStatus
from freki.engine.models import ModelStatus


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
