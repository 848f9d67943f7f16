"""Status types: Freki's index status (models, migration), a FullReindex's result and Geri's model list, as
plain dataclasses."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from wolf.v1 import freki_pb2, geri_pb2


@dataclass(frozen=True)
class IndexStatusInfo:
    """What Freki reports about its index."""

    document_count: int
    chunk_count: int
    embedding_model: str
    embedding_dimension: int
    store_backend: str
    collection: str
    queue_depth: int
    watch_folders: list[dict[str, Any]] = field(default_factory=list)
    # The model the settings name (differs from embedding_model until a model migration switched).
    configured_embedding_model: str = ""
    # Every embedding model in use, the standard one first: model, dimension, collection, counts, document types.
    embedding_models: list[dict[str, Any]] = field(default_factory=list)
    # A blue/green model migration (state, model_from, model_to, documents_done/total, error), or None.
    migration: dict[str, Any] | None = None
    # "ok", "degraded" (disk, quarantined chunks) or "unavailable" (the store is gone), and why.
    health: str = ""
    health_reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class ModelList:
    """Models Geri can serve."""

    default_model: str
    models: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def status_from_proto(resp: freki_pb2.IndexStatus) -> IndexStatusInfo:
    """Convert GetIndexStatus's response."""
    return IndexStatusInfo(
        document_count=int(resp.document_count),
        chunk_count=int(resp.chunk_count),
        embedding_model=resp.embedding_model,
        embedding_dimension=resp.embedding_dimension,
        store_backend=resp.store_backend,
        collection=resp.collection,
        queue_depth=resp.queue_depth,
        watch_folders=[
            {"path": w.path, "files_indexed": w.files_indexed, "files_pending": w.files_pending,
             "skipped": [{"path": s.path, "reason": s.reason} for s in w.skipped]}
            for w in resp.watch_folders
        ],
        configured_embedding_model=resp.configured_embedding_model,
        embedding_models=[
            {"model": m.model, "dimension": m.dimension, "collection": m.collection, "standard": m.standard,
             "available": m.available, "document_types": list(m.document_types),
             "document_count": int(m.document_count), "chunk_count": int(m.chunk_count)}
            for m in resp.embedding_models
        ],
        migration=migration_from_proto(resp.migration) if resp.HasField("migration") else None,
        health=resp.health,
        health_reasons=list(resp.health_reasons),
    )


def migration_from_proto(m: freki_pb2.MigrationStatus) -> dict[str, Any]:
    """A model migration's progress as a JSON-ready dict."""
    return {"state": m.state, "model_from": m.model_from, "model_to": m.model_to, "started_at": m.started_at,
            "documents_done": int(m.documents_done), "documents_total": int(m.documents_total), "error": m.error}


@dataclass(frozen=True)
class ReindexResult:
    """What FullReindex did: documents re-chunked from their kept source or only re-embedded, or the model
    migration it started (``migration``)."""

    documents_reindexed: int
    chunks_embedded: int
    documents_rechunked: int
    documents_reembedded_only: int
    note: str
    duration_ms: int
    migration: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def reindex_from_proto(resp: freki_pb2.FullReindexResponse) -> ReindexResult:
    """Convert FullReindex's response."""
    return ReindexResult(
        documents_reindexed=resp.documents_reindexed, chunks_embedded=resp.chunks_embedded,
        documents_rechunked=resp.documents_rechunked, documents_reembedded_only=resp.documents_reembedded_only,
        note=resp.note, duration_ms=int(resp.duration_ms),
        migration=migration_from_proto(resp.migration) if resp.HasField("migration") else None,
    )


def models_from_proto(resp: geri_pb2.ListModelsResponse) -> ModelList:
    """Convert ListModels's response."""
    return ModelList(
        default_model=resp.default_model,
        models=[
            {"name": m.name, "backend": m.backend, "size_bytes": int(m.size_bytes),
             "context_length": m.context_length, "family": m.family}
            for m in resp.models
        ],
    )
