"""Embedding lanes: one per embedding model in use — its embedder, its chunker and its chunk collection.

The indexer routes each parsed document to one lane (``freki.embed.layout.EmbeddingLayout.route``): the
lane's model chunks and embeds it and its chunks are written to the lane's collection only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from freki.embed.layout import DOCUMENT_TYPE_KEY, EmbeddingLayout
from freki.embed.model import EmbeddingModel
from freki.ingest.chunking import SemanticChunker
from freki.ingest.limits import ChunkingConfig
from freki.store import VectorStore


class ChunkerFactory(Protocol):
    """Builds a chunker around a sentence-embedding function (one per document, for the cache); ``config``:
    the chunking of the document's type (``ChunkProfiles``), else the chunking in force."""

    def __call__(self, embed: Callable[[list[str]], np.ndarray], config: ChunkingConfig | None = None
                 ) -> SemanticChunker: ...


@dataclass(frozen=True)
class ChunkProfiles:
    """The type registry's chunk profiles, read live: ``profile_of(document_type)`` (None: the chunking in
    force) and ``fingerprint()``, part of every document's content hash while any profile is set."""

    profile_of: Callable[[object], ChunkingConfig | None]
    fingerprint: Callable[[], str]


@dataclass(frozen=True)
class IndexLane:
    """What indexes the documents of one embedding model."""

    model: str  # the embedder's identity name: recorded with each document and its collection
    embedder: EmbeddingModel
    make_chunker: ChunkerFactory
    chunks: VectorStore


class LaneRouter:
    """Picks a document's lane from its detected content type and its ``document_type`` metadata."""

    def __init__(self, lanes: Sequence[IndexLane], layout: EmbeddingLayout | None = None) -> None:
        """``lanes``: the standard model's first; ``layout`` routes only to models that have a lane."""
        self.lanes = {lane.model: lane for lane in lanes}
        self.standard = lanes[0]
        self.layout = layout or EmbeddingLayout(self.standard.model)
        missing = set(self.layout.models) - set(self.lanes)
        if missing:
            raise ValueError(f"the layout routes to models without a lane: {sorted(missing)}")

    def route(self, content_type: str, metadata: Mapping[str, object]) -> tuple[IndexLane, str]:
        """(lane, the document type that chose it; "" for the standard model)."""
        model, document_type = self.layout.route(content_type, metadata.get(DOCUMENT_TYPE_KEY))
        return self.lanes[model], document_type

    def store_of(self, model: str) -> VectorStore:
        """The collection of ``model``'s chunks (the standard one for a model no lane serves)."""
        lane = self.lanes.get(model)
        return lane.chunks if lane is not None else self.standard.chunks

    @property
    def stores(self) -> list[VectorStore]:
        """Every lane's chunk collection, the standard one first."""
        return [lane.chunks for lane in self.lanes.values()]
