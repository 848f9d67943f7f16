"""What one stored chunk holds (its payload), and its text as the lexical index sees it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from freki.ingest.chunking import Chunk
from freki.store.metadata import Metadata, typed_fields


def chunk_payload(*, tenant: str, document_id: str, source: str, owner: str, content_type: str,
                  metadata: Metadata, chunk: Chunk, digest: str, now: str, generation: str,
                  access_groups: Collection[str] = ()) -> dict[str, Any]:
    """The payload of ``chunk`` of one document version (``generation``); ``digest``: the document's hash;
    ``access_groups``: who inside the tenant may read it (none: everyone)."""
    return {
        "tenant_id": tenant,
        "owner_id": owner,
        "document_id": document_id,
        "generation": generation,
        "source": source,
        "source_type": content_type,
        "chunk_index": chunk.index,
        "chunk_hash": chunk.hash,
        "doc_hash": digest,
        "token_count": chunk.token_count,
        "content": chunk.text,
        "overlap_chars": chunk.overlap_chars,
        "indexed_at": now,
        "access_groups": sorted(access_groups),
        "metadata": (merged := {**metadata, **chunk.metadata}),
        **typed_fields(merged),
    }


def lexical_text(payload: Mapping[str, Any]) -> str:
    """A stored chunk's text without the leading overlap from the previous chunk (none before this field)."""
    content = str(payload.get("content", ""))
    overlap = payload.get("overlap_chars", 0)
    return content[overlap:] if isinstance(overlap, int) and 0 < overlap < len(content) else content
