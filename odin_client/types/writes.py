"""What a write did: indexing one document, erasing a data owner."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from wolf.v1 import freki_pb2


@dataclass(frozen=True)
class Erasure:
    """What a GDPR erasure of one data owner removed: Freki's documents and chunks, Geri's sessions."""

    documents: int
    chunks: int
    sessions: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class IndexResult:
    """Result of indexing one document."""

    document_id: str
    source: str
    outcome: str
    chunk_count: int
    chunks_embedded: int
    server_ms: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def index_result_from_proto(resp: freki_pb2.IndexDocumentResponse, source: str) -> IndexResult:
    """Convert an IndexDocument response."""
    outcome = freki_pb2.IndexOutcome.Name(resp.outcome).removeprefix("INDEX_OUTCOME_").lower()
    return IndexResult(
        document_id=resp.document_id,
        source=source,
        outcome=outcome,
        chunk_count=resp.chunk_count,
        chunks_embedded=resp.chunks_embedded,
        server_ms=int(resp.duration_ms),
    )
