"""What Freki says about stored documents, as plain dataclasses: a document's record, a page of them,
an export record (JSON-ready, the same form ``freki export`` writes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from google.protobuf.json_format import MessageToDict
from wolf.v1 import freki_pb2


@dataclass(frozen=True)
class DocumentRecord:
    """One stored document (GetDocument / ListDocuments)."""

    document_id: str
    tenant_id: str
    owner_id: str
    source: str
    content_type: str
    content_hash: str
    chunk_count: int
    indexed_at: str  # RFC 3339, "" when unknown
    embedding_model: str
    metadata: dict[str, str] = field(default_factory=dict)
    # Languages its chunks' lexical terms were analyzed in, most frequent first (empty: English, older Freki).
    languages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class DocumentPage:
    """A page of ListDocuments; pass ``next_page_token`` to get the next ("" = last page)."""

    documents: list[DocumentRecord]
    next_page_token: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"documents": [d.to_dict() for d in self.documents], "next_page_token": self.next_page_token}


def record_from_proto(info: freki_pb2.DocumentInfo) -> DocumentRecord:
    """Convert a DocumentInfo."""
    indexed = info.indexed_at.ToJsonString() if info.HasField("indexed_at") else ""
    return DocumentRecord(document_id=info.document_id, tenant_id=info.tenant_id, owner_id=info.owner_id,
                          source=info.source, content_type=info.content_type, content_hash=info.content_hash,
                          chunk_count=info.chunk_count, indexed_at=indexed, embedding_model=info.embedding_model,
                          metadata=dict(info.metadata), languages=list(info.languages))


def export_record_to_dict(record: freki_pb2.ExportRecord) -> dict[str, Any]:
    """One export record as JSON: ``{"document": {...}}`` or ``{"chunk": {...}}`` (proto field names)."""
    return MessageToDict(record, preserving_proto_field_name=True)
