"""Document registry: one record per indexed document (hash, chunk count, owner, metadata).

Records live in a companion collection of the same vector store (``<collection>_documents``,
a 1-dimensional placeholder vector), not in a local file, so several Freki replicas sharing a
remote Qdrant cluster see the same registry, and GDPR erasure covers it with the same calls.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from freki.store import ChunkPoint, CollectionSpec, FieldMatch, VectorStore, scroll_pages
from freki.store.metadata import Metadata, normalise

# Fixed namespace so ids are stable across processes and releases.
ID_NAMESPACE = uuid.UUID("5b0f3d4e-7c1a-4e55-9a59-8f7f3c2d9b10")
_PLACEHOLDER_VECTOR = [1.0]
# Record fields sealed per generation (freki.store.sealed); the rest are needed to filter and list.
RECORD_SEALED_FIELDS = ("source", "content_hash", "metadata")


def document_point_id(tenant: str, document_id: str) -> str:
    """Deterministic UUID of a document's registry record."""
    return str(uuid.uuid5(ID_NAMESPACE, f"doc\x1f{tenant}\x1f{document_id}"))


def chunk_point_id(tenant: str, document_id: str, generation: str, index: int) -> str:
    """UUID of a chunk: its position in one generation (version) of a document.

    Each version of a document is written as new points under a new generation and the old version's points
    are deleted once the new one is committed (``freki.ingest.commit``), so a crash can never leave a
    document half old and half new. Unchanged chunks keep their vectors (copied, not re-embedded).
    """
    return str(uuid.uuid5(ID_NAMESPACE, f"chunk\x1f{tenant}\x1f{document_id}\x1f{generation}\x1f{index}"))


def new_generation(now: float | None = None) -> str:
    """A fresh generation (document version) id; also the id of the key that seals its text.

    Laid out as a UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits, so any replica can
    tell how old an uncommitted generation is (``generation_age_s``) without asking the one writing it.
    """
    ms = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return f"{value:032x}"


def generation_age_s(generation: str, now: float | None = None) -> float:
    """Seconds since ``generation`` was started; infinite for ids without a time (older releases' UUIDv4)."""
    if len(generation) != 32 or generation[12] != "7":
        return math.inf
    try:
        started_ms = int(generation[:12], 16)
    except ValueError:
        return math.inf
    return max(0.0, (time.time() if now is None else now) - started_ms / 1000)


@dataclass
class DocumentRecord:
    """What Freki knows about one indexed document."""

    tenant_id: str
    document_id: str
    owner_id: str
    source: str
    content_type: str
    content_hash: str
    chunk_count: int
    indexed_at: str  # ISO 8601, UTC
    embedding_model: str
    metadata: Metadata = field(default_factory=dict)
    # The committed version: its chunks carry the same ``generation``; "" for records older than generations.
    generation: str = ""
    # The embedding model's dimension, and the document type that routed the document to a type-specific
    # model ("" = the standard model); 0 and "" in records written before type-specific models.
    embedding_dimension: int = 0
    document_type: str = ""
    # The languages its chunks were analyzed in, the most frequent first (empty in older records: English).
    languages: list[str] = field(default_factory=list)
    # Who may read it inside the tenant (freki.store.access); empty = tenant-wide.
    access_groups: list[str] = field(default_factory=list)

    def readable_by(self, groups: Iterable[str] | None) -> bool:
        """Whether a caller holding access ``groups`` (None: unrestricted) may read the document
        (``freki.store.access``; reads by id check the fetched record instead of filtering)."""
        return groups is None or not self.access_groups or bool(set(self.access_groups) & set(groups))

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> DocumentRecord:
        """Rebuild a record from a stored payload."""
        names = cls.__dataclass_fields__.keys()
        values = {k: payload[k] for k in names if k in payload}
        values["metadata"] = {str(k): normalise(v) for k, v in (payload.get("metadata") or {}).items()}
        return cls(**values)


class DocumentRegistry:
    """CRUD over document records, always scoped by tenant."""

    def __init__(self, store: VectorStore, collection: str) -> None:
        self.store = store
        self._store = store
        self._store.ensure_collection(
            CollectionSpec(name=collection, dense_dim=1, embedding_model="document-registry", sparse=False)
        )

    def get(self, tenant: str, document_id: str) -> DocumentRecord | None:
        """The record of a document, or None when it is not indexed."""
        found = self._store.retrieve([document_point_id(tenant, document_id)])
        if not found or found[0].payload.get("tenant_id") != tenant:
            return None
        return DocumentRecord.from_payload(found[0].payload)

    def committed(self, tenant: str, document_ids: Iterable[str]) -> dict[str, str]:
        """The committed generation of each of ``document_ids`` that has a record, in one request."""
        wanted = {document_point_id(tenant, d): d for d in document_ids}
        found = self._store.retrieve(list(wanted)) if wanted else []
        return {
            str(p.payload.get("document_id")): str(p.payload.get("generation", ""))
            for p in found if p.payload.get("tenant_id") == tenant
        }

    def put(self, record: DocumentRecord) -> None:
        """Insert or replace a record."""
        point = ChunkPoint(
            id=document_point_id(record.tenant_id, record.document_id),
            dense=_PLACEHOLDER_VECTOR,
            sparse=None,
            payload=asdict(record),
        )
        self._store.upsert([point])

    def delete(self, tenant: str, document_id: str) -> None:
        """Remove a record (no error when absent)."""
        self._store.delete_ids([document_point_id(tenant, document_id)])

    def delete_owner(self, tenant: str, owner_id: str) -> int:
        """Remove every record of one data owner in one call; returns how many there were."""
        if not owner_id:
            # An empty owner would make the filter match the whole tenant.
            raise ValueError("owner_id must be non-empty to erase an owner's records")
        return self._store.delete_where(self._filter(tenant, owner_id))

    def page(
        self, tenant: str, *, owner_id: str = "", limit: int = 100, offset: str | None = None,
        visible: Sequence[FieldMatch] = (),
    ) -> tuple[list[DocumentRecord], str | None]:
        """One page of a tenant's records (those matching ``visible`` too: ``freki.store.access``) and the
        offset of the next page (None at the end)."""
        points, next_offset = self._store.scroll([*self._filter(tenant, owner_id), *visible], limit=limit,
                                                 offset=offset)
        return [DocumentRecord.from_payload(p.payload) for p in points], next_offset

    def iterate(self, tenant: str, *, owner_id: str = "", page_size: int = 256,
                visible: Sequence[FieldMatch] = ()) -> Iterator[DocumentRecord]:
        """Every record of a tenant (optionally one owner; those matching ``visible``), page by page."""
        offset: str | None = None
        while True:
            records, offset = self.page(tenant, owner_id=owner_id, limit=page_size, offset=offset, visible=visible)
            yield from records
            if offset is None:
                return

    def everything(self, page_size: int = 512) -> Iterator[DocumentRecord]:
        """Every record of every tenant (for the start-up consistency pass)."""
        for points in scroll_pages(self._store, [], page_size):
            yield from (DocumentRecord.from_payload(p.payload) for p in points)

    def count(self, tenant: str | None = None, visible: Sequence[FieldMatch] = ()) -> int:
        """Number of records, of one tenant or of all (those matching ``visible``)."""
        return self._store.count([*(self._filter(tenant, "") if tenant else []), *visible])

    @staticmethod
    def _filter(tenant: str | None, owner_id: str) -> list[FieldMatch]:
        flt = [FieldMatch("tenant_id", (tenant,))] if tenant else []
        if owner_id:
            flt.append(FieldMatch("owner_id", (owner_id,)))
        return flt
