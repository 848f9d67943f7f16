"""What the framework retrievers share (the search options, the metadata of a passage, one Odin retrieve,
blocking or asyncio) and, with the MCP tools, where a passage sits. No framework is imported here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from odin_client.client import AsyncOdinClient, OdinClient
from odin_client.types.filters import Filters
from odin_client.types.results import Retrieval, Source

LOCATION_KEYS = ("page", "slide", "sheet", "section")


@dataclass
class SearchOptions:
    """How a retriever searches: as :meth:`odin_client.OdinClient.retrieve`'s arguments."""

    top_k: int = 4
    mode: str = ""
    filters: Filters | None = None
    document_ids: list[str] = field(default_factory=list)
    score_threshold: float | None = None


def location_fields(source: Source) -> dict[str, str]:
    """Where a chunk sits: page, slide, sheet and section as Freki recorded them (only those it has)."""
    return {k: source.metadata[k] for k in LOCATION_KEYS if source.metadata.get(k)}


def passage_metadata(source: Source) -> dict[str, Any]:
    """A passage's metadata for a framework: where it comes from (document id, chunk id, source, title,
    location: page, slide, sheet, section and a label) and its relevance score, then the chunk's own metadata
    (whose keys never replace these)."""
    own = {k: v for k, v in source.metadata.items() if k not in LOCATION_KEYS}
    return {**own, "document_id": source.document_id, "chunk_id": source.chunk_id, "chunk_index": source.chunk_index,
            "source": source.source, "title": source.metadata.get("title") or source.source, **location_fields(source),
            "location": source.location, "score": source.score}


def retrieve(client: OdinClient, query: str, options: SearchOptions) -> Retrieval:
    """One blocking retrieve with ``options``."""
    return client.retrieve(query, top_k=options.top_k, mode=options.mode, filters=options.filters,
                           document_ids=options.document_ids, score_threshold=options.score_threshold)


async def aretrieve(client: AsyncOdinClient, query: str, options: SearchOptions) -> Retrieval:
    """One asyncio retrieve with ``options``."""
    return await client.retrieve(query, top_k=options.top_k, mode=options.mode, filters=options.filters,
                                 document_ids=options.document_ids, score_threshold=options.score_threshold)
