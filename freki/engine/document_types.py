"""The type registry (``document_types`` settings) as the indexer and the retriever read it, live: a reload
changes what the next document is chunked with and how the next search weighs each type."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from freki.ingest.lanes import ChunkProfiles
from freki.ingest.limits import ChunkingConfig
from freki.settings import FrekiSettings
from freki.settings.document_types import chunk_profiles_fingerprint


def chunk_profiles(settings: FrekiSettings, chunking: Callable[[], ChunkingConfig]) -> ChunkProfiles:
    """Each type's chunk sizes over the chunking in force (its boundary signal and threshold kept)."""
    def profile_of(document_type: object) -> ChunkingConfig | None:
        entry = settings.document_types.get(document_type) if isinstance(document_type, str) else None
        if entry is None or entry.chunking is None:
            return None
        sizes = entry.chunking
        return dataclasses.replace(chunking(), max_tokens=sizes.max_tokens, min_tokens=sizes.min_tokens,
                                   overlap_tokens=sizes.overlap_tokens)

    return ChunkProfiles(profile_of, lambda: chunk_profiles_fingerprint(settings.document_types))


def type_weights(settings: FrekiSettings) -> Callable[[], Mapping[str, float]]:
    """The retriever weights that are not neutral (an empty mapping costs searches nothing)."""
    return lambda: {name: entry.retriever_weight for name, entry in settings.document_types.items()
                    if entry.retriever_weight != 1.0}
