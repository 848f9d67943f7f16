"""What GetIndexStatus reports of the engine."""

from __future__ import annotations

from dataclasses import dataclass, replace

from freki.engine import models
from freki.engine.blue_green import MigrationStatus
from freki.engine.health import health
from freki.engine.index_set import IndexSet, embedding_config
from freki.engine.models import ModelStatus
from freki.ingest.registry import DocumentRegistry
from freki.settings import FrekiSettings
from freki.store.access import visible_to
from freki.store.disk import DiskState
from freki.store.integrity import QuarantinedChunk

_HIDDEN_ERROR = "the migration failed; its error is shown to admin keys without access_groups"


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
    quarantined: tuple[QuarantinedChunk, ...] = ()  # the tenant's
    # Quarantined chunks the health line counts: every tenant's for the operator, the tenant's own otherwise.
    quarantined_count: int = 0
    store_problem: str | None = None  # why the store cannot serve (freki.engine.health.StoreProbe)
    detailed: bool = True  # the disk's path and bytes in the health reasons

    @property
    def health(self) -> tuple[str, tuple[str, ...]]:
        """("ok" | "degraded" | "unavailable", reasons): freki.engine.health."""
        return health(self.disk, self.quarantined_count, detailed=self.detailed, store_problem=self.store_problem)


def engine_status(index: IndexSet, settings: FrekiSettings, migration: MigrationStatus | None, tenant: str | None,
                  *, disk: DiskState | None = None, quarantined: tuple[QuarantinedChunk, ...] = (),
                  quarantined_count: int = 0) -> EngineStatus:
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
        quarantined=quarantined,
        quarantined_count=quarantined_count,
    )


def visible_counts(status: EngineStatus, registry: DocumentRegistry, tenant: str,
                   groups: frozenset[str]) -> EngineStatus:
    """``status`` with its counts limited to the documents a group-restricted caller may read, so the counts
    do not tell it how many hidden documents (or chunks) exist. Summed from the visible records."""
    docs: dict[str, int] = {}
    chunks: dict[str, int] = {}
    for record in registry.iterate(tenant, visible=visible_to(groups)):
        docs[record.embedding_model] = docs.get(record.embedding_model, 0) + 1
        chunks[record.embedding_model] = chunks.get(record.embedding_model, 0) + record.chunk_count
    models = tuple(replace(m, document_count=docs.get(m.model, 0), chunk_count=chunks.get(m.model, 0))
                   for m in status.models)
    documents, chunk_total = sum(docs.values()), sum(chunks.values())
    readable: dict[str, bool] = {}  # quarantined chunks name their documents: list those the caller may read
    for chunk in status.quarantined:
        if chunk.document_id not in readable:
            found = registry.get(tenant, chunk.document_id)
            readable[chunk.document_id] = found is not None and found.readable_by(groups)
    quarantined = tuple(c for c in status.quarantined if readable[c.document_id])
    return replace(tenant_view(replace(status, quarantined=quarantined)), document_count=documents,
                   chunk_count=chunk_total, models=models)


def tenant_view(status: EngineStatus) -> EngineStatus:
    """``status`` without the figures that span every tenant, for a key that is not the operator's.

    A migration walks every tenant's documents, so the caller sees its state and models but not its counts, and
    only that it failed, not its error, which may name any document (docs/decisions/0330). The data dir's free
    and total bytes move with every tenant's writes, so the caller sees the disk's level only. Health counts
    the caller's own quarantined chunks: another tenant's damaged chunks neither show nor degrade it.
    """
    migration = replace(status.migration, documents_done=0, documents_total=0,
                        error=_HIDDEN_ERROR if status.migration.error else "") if status.migration else None
    disk = replace(status.disk, path="", free_bytes=0, total_bytes=0, refuse_at=0, warn_at=0, populate_debt=0) \
        if status.disk else None
    return replace(status, migration=migration, disk=disk, detailed=False, quarantined_count=len(status.quarantined))
