"""Status types: Freki's index status and Geri's model list, as plain dataclasses."""

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
