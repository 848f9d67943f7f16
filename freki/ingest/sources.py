"""Kept sources: the bytes IndexDocument or the watcher received, so FullReindex can re-parse and re-chunk.

Each document version's source lives in a companion collection (``<collection>_sources``, placeholder
vectors) as pieces of at most ``PIECE_BYTES``, under the same generation as its chunks: sealed with that
generation's key (``freki.store.sealed``), so deleting or erasing the document shreds its source too. The
pieces are written before the registry record (the commit point, ``freki.ingest.commit``) and the old
version's pieces are deleted with its chunks; the start-up pass removes pieces no committed record names.
Replicas sharing a Qdrant server share the collection. Sources larger than the configured maximum are not
kept (FullReindex then re-embeds the stored chunk texts of that document).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from freki.ingest.commit import document_filter
from freki.ingest.registry import ID_NAMESPACE
from freki.store import ChunkPoint, CollectionSpec, FieldMatch, VectorStore, scroll_pages
from freki.store.metadata import Metadata
from freki.store.sealed import GENERATION

PIECE_BYTES = 512 * 1024
SOURCE_SEALED_FIELDS = ("data", "request")
_PLACEHOLDER = [1.0]


@dataclass(frozen=True)
class KeptSource:
    """What one index call received (enough to repeat it)."""

    data: str | bytes
    source: str
    content_type: str
    metadata: Metadata = field(default_factory=dict)
    owner_id: str = ""


def source_point_id(tenant: str, document_id: str, generation: str, piece: int) -> str:
    return str(uuid.uuid5(ID_NAMESPACE, f"source\x1f{tenant}\x1f{document_id}\x1f{generation}\x1f{piece}"))


class SourceStore:
    """Writes, reads and deletes the kept sources of one index."""

    def __init__(self, store: VectorStore, collection: str, max_bytes: int) -> None:
        self.store = store
        self.max_bytes = max_bytes
        store.ensure_collection(CollectionSpec(name=collection, dense_dim=1, embedding_model="document-sources",
                                               sparse=False))

    def points(self, tenant: str, owner: str, document_id: str, generation: str,
               kept: KeptSource) -> list[ChunkPoint]:
        """The pieces of one version's source (none when it is larger than ``max_bytes``)."""
        is_text = isinstance(kept.data, str)
        raw = kept.data.encode("utf-8", "surrogatepass") if isinstance(kept.data, str) else kept.data
        if len(raw) > self.max_bytes:
            return []
        pieces = [raw[i : i + PIECE_BYTES] for i in range(0, len(raw), PIECE_BYTES)] or [b""]
        request = {"text": is_text, "source": kept.source, "content_type": kept.content_type,
                   "metadata": kept.metadata, "owner_id": kept.owner_id}
        return [
            ChunkPoint(
                id=source_point_id(tenant, document_id, generation, i), dense=_PLACEHOLDER, sparse=None,
                payload={"tenant_id": tenant, "owner_id": owner, "document_id": document_id,
                         GENERATION: generation, "piece": i, "pieces": len(pieces),
                         "data": base64.b64encode(piece).decode("ascii"),
                         **({"request": json.dumps(request)} if i == 0 else {})},
            )
            for i, piece in enumerate(pieces)
        ]

    def load(self, tenant: str, document_id: str, generation: str) -> KeptSource | None:
        """The kept source of one committed version, or None (not kept, too large, or incomplete)."""
        if not generation:
            return None
        version = [*document_filter(tenant, document_id), FieldMatch(GENERATION, (generation,))]
        found = [p for page in scroll_pages(self.store, version, 64) for p in page]
        found.sort(key=lambda p: int(p.payload.get("piece", 0)))
        if not found or len(found) != int(found[0].payload.get("pieces", -1)) or "request" not in found[0].payload:
            return None
        raw = b"".join(base64.b64decode(str(p.payload.get("data", ""))) for p in found)
        request = json.loads(str(found[0].payload["request"]))
        data: str | bytes = raw.decode("utf-8", "surrogatepass") if request.get("text") else raw
        return KeptSource(data=data, source=str(request.get("source", "")),
                          content_type=str(request.get("content_type", "")),
                          metadata=dict(request.get("metadata") or {}), owner_id=str(request.get("owner_id", "")))

    def delete_generations(self, tenant: str, document_id: str, generations: Sequence[str]) -> None:
        if generations:
            self.store.delete_where([*document_filter(tenant, document_id), FieldMatch(GENERATION, tuple(generations))])

    def retire(self, tenant: str, document_id: str, keep: str) -> None:
        """Delete every version's source but ``keep``'s."""
        self.store.delete_where([*document_filter(tenant, document_id), FieldMatch(GENERATION, (keep,), exclude=True)])

    def delete(self, tenant: str, document_id: str) -> None:
        self.store.delete_where(document_filter(tenant, document_id))

    def delete_owner(self, tenant: str, owner_id: str) -> None:
        if not owner_id:
            raise ValueError("owner_id must be non-empty to erase an owner's sources")
        self.store.delete_where([FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))])

    def remove_orphans(self, committed: set[str]) -> int:
        """Delete the pieces of generations no committed record names (start-up pass); returns pieces deleted."""
        orphans = [g for g in self.store.value_counts(GENERATION) if g not in committed]
        return sum(self.store.delete_where([FieldMatch(GENERATION, tuple(orphans[i : i + 256]))])
                   for i in range(0, len(orphans), 256))
