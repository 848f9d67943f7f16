"""What the indexer takes (one validated document, the limits after parsing) and what it reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from freki.ingest.parsing import ParseLimits
from freki.ingest.quotas import MetadataLimits
from freki.store.metadata import Metadata


@dataclass(frozen=True)
class IndexInput:
    """One document to index, already validated."""

    tenant_id: str
    document_id: str
    data: str | bytes
    source: str = ""
    content_type: str = ""
    owner_id: str = ""
    metadata: Metadata = field(default_factory=dict)
    force_full_reindex: bool = False
    # Who may read it inside the tenant (freki.store.access); empty = tenant-wide.
    access_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexResult:
    """What an index call did."""

    document_id: str
    outcome: str  # "created" | "updated" | "unchanged"
    chunk_count: int
    chunks_embedded: int
    chunks_unchanged: int
    chunks_deleted: int
    full_reindex: bool
    content_hash: str
    duration_ms: int


@dataclass(frozen=True)
class IngestLimits:
    """Limits the indexer applies after parsing (the ``limits`` settings)."""

    metadata: MetadataLimits = MetadataLimits()
    max_chunks: int = 10_000
    parse: ParseLimits = ParseLimits()
