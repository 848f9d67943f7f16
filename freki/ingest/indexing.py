"""Indexing pipeline: parse → chunk → embed → store, incrementally.

Chunk point ids derive from (tenant, document, chunk text hash, occurrence), so when a
document is re-indexed, chunks whose text did not change keep their id and vector and are
not re-embedded; only new chunks are embedded and vanished ones deleted. When more than
``full_reindex_ratio`` of the chunks changed, every chunk is re-embedded. The store applies
upserts, deletions and payload updates as one batch (see ``VectorStore.apply``), and the
document record is written last, so a crash mid-way leaves a state the next index call
repairs without duplicates.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from freki.embed.embedder import Embedder
from freki.ingest.caches import SentenceVectorCache, embed_in_slices
from freki.ingest.chunking import Chunk, SemanticChunker
from freki.ingest.parsing import parse_document
from freki.ingest.registry import DocumentRecord, DocumentRegistry, chunk_point_id
from freki.store import ChunkPoint, FieldMatch, SparseVector, StoredPoint, VectorStore
from wolf_service.errors import InvalidArgument

log = logging.getLogger("freki.indexing")


@dataclass(frozen=True)
class IndexInput:
    """One document to index, already validated."""

    tenant_id: str
    document_id: str
    data: str | bytes
    source: str = ""
    content_type: str = ""
    owner_id: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    force_full_reindex: bool = False


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




def document_filter(tenant: str, document_id: str) -> list[FieldMatch]:
    """The store filter selecting one document's chunks."""
    return [FieldMatch("tenant_id", (tenant,)), FieldMatch("document_id", (document_id,))]


def document_chunks(
    store: VectorStore, tenant: str, document_id: str, *, with_vectors: bool = False
) -> list[StoredPoint]:
    """Every stored chunk of one document, in chunk order, paging through the store."""
    points: list[StoredPoint] = []
    offset: str | None = None
    while True:
        page, offset = store.scroll(
            document_filter(tenant, document_id), limit=512, offset=offset, with_vectors=with_vectors
        )
        points.extend(page)
        if offset is None:
            return sorted(points, key=lambda p: int(p.payload.get("chunk_index", 0)))


SparseEncode = Callable[[Sequence[str]], list[SparseVector]]
# Builds a chunker around a sentence-embedding function (one per document, for the cache).
ChunkerFactory = Callable[[Callable[[list[str]], np.ndarray]], SemanticChunker]


class Indexer:
    """Turns documents into stored, searchable chunks."""

    def __init__(
        self,
        *,
        embedder: Embedder,
        make_chunker: ChunkerFactory,
        chunks: VectorStore,
        registry: DocumentRegistry,
        sparse_encode: SparseEncode | None = None,
        full_reindex_ratio: float = 0.5,
        chunking_fingerprint: str = "",
        sentence_cache: SentenceVectorCache | None = None,
    ) -> None:
        self._embedder = embedder
        self._make_chunker = make_chunker
        self._chunks = chunks
        self._registry = registry
        self._sparse = sparse_encode
        self._full_ratio = full_reindex_ratio
        self._fingerprint = chunking_fingerprint
        self.sentence_cache = sentence_cache or SentenceVectorCache()
        self._doc_locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def sparse_encode(self, texts: Sequence[str]) -> list[SparseVector | None]:
        """Sparse (lexical) vectors for texts, or Nones when no sparse encoder is configured."""
        return list(self._sparse(texts)) if self._sparse else [None] * len(texts)

    def _lock_for(self, key: tuple[str, str]) -> threading.Lock:
        with self._locks_guard:
            return self._doc_locks.setdefault(key, threading.Lock())

    def document_lock(self, tenant: str, document_id: str) -> threading.Lock:
        """The lock ``index`` holds for a document; hold it to change the document's points otherwise."""
        return self._lock_for((tenant, document_id))

    def content_hash(self, doc: IndexInput) -> str:
        """Hash of everything that determines the stored chunks of a document."""
        h = hashlib.sha256()
        h.update(doc.data if isinstance(doc.data, bytes) else doc.data.encode("utf-8"))
        h.update(json.dumps(
            [doc.content_type, doc.source, doc.owner_id, sorted(doc.metadata.items()),
             self._fingerprint, self._embedder.identity.name],
        ).encode())
        return h.hexdigest()

    def index(self, doc: IndexInput) -> IndexResult:
        """Index or re-index one document; a no-op when its content is unchanged."""
        started = time.perf_counter()
        key = (doc.tenant_id, doc.document_id)
        with self._lock_for(key):
            digest = self.content_hash(doc)
            existing = self._registry.get(doc.tenant_id, doc.document_id)
            if existing and existing.content_hash == digest and not doc.force_full_reindex:
                return IndexResult(doc.document_id, "unchanged", existing.chunk_count, 0,
                                   existing.chunk_count, 0, False, digest, _ms(started))
            parsed = parse_document(doc.data, source=doc.source, content_type=doc.content_type)
            chunker = self._make_chunker(self.sentence_cache.embedder_for(key, self._embedder.embed))
            chunks = chunker.chunk(parsed)
            if not chunks:
                raise InvalidArgument(
                    f"document {doc.document_id!r} ({doc.source or 'no source'}) has no text to index"
                )
            metadata = {**parsed.metadata, **doc.metadata}
            if parsed.title and "title" not in metadata:
                metadata["title"] = parsed.title
            result = self._write(doc, parsed.content_type, metadata, chunks, digest, existing is not None, started)
            self._registry.put(DocumentRecord(
                tenant_id=doc.tenant_id, document_id=doc.document_id, owner_id=doc.owner_id or doc.tenant_id,
                source=doc.source, content_type=parsed.content_type, content_hash=digest,
                chunk_count=len(chunks), indexed_at=datetime.now(UTC).isoformat(),
                embedding_model=self._embedder.identity.name, metadata=metadata,
            ))
            return result

    def _write(
        self, doc: IndexInput, content_type: str, metadata: dict[str, str], chunks: list[Chunk],
        digest: str, existed: bool, started: float,
    ) -> IndexResult:
        existing_ids = {p.id for p in document_chunks(self._chunks, doc.tenant_id, doc.document_id)}
        occurrences: dict[str, int] = {}
        ids: list[str] = []
        for chunk in chunks:
            n = occurrences.get(chunk.hash, 0)
            occurrences[chunk.hash] = n + 1
            ids.append(chunk_point_id(doc.tenant_id, doc.document_id, chunk.hash, n))
        new_positions = [i for i, pid in enumerate(ids) if pid not in existing_ids]
        full = doc.force_full_reindex or (
            existed and len(new_positions) > self._full_ratio * len(chunks)
        )
        embed_positions = list(range(len(chunks))) if full else new_positions
        texts = [chunks[i].text for i in embed_positions]
        vectors = embed_in_slices(self._embedder.embed, texts)
        sparse = self.sparse_encode(texts)
        now = datetime.now(UTC).isoformat()
        payloads = [self._payload(doc, content_type, metadata, c, digest, now) for c in chunks]
        upserts = [
            ChunkPoint(id=ids[i], dense=vectors[j].tolist(), sparse=sparse[j], payload=payloads[i])
            for j, i in enumerate(embed_positions)
        ]
        embedded = set(embed_positions)
        kept = [i for i in range(len(chunks)) if i not in embedded]
        stale = sorted(existing_ids - set(ids))
        self._chunks.apply(
            upserts=upserts,
            delete_ids=stale,
            payload_updates=[([ids[i]], _without_content(payloads[i])) for i in kept],
        )
        return IndexResult(
            document_id=doc.document_id,
            outcome="updated" if existed else "created",
            chunk_count=len(chunks),
            chunks_embedded=len(embed_positions),
            chunks_unchanged=len(kept),
            chunks_deleted=len(stale),
            full_reindex=bool(full and existed),
            content_hash=digest,
            duration_ms=_ms(started),
        )

    @staticmethod
    def _payload(
        doc: IndexInput, content_type: str, metadata: dict[str, str], chunk: Chunk, digest: str, now: str
    ) -> dict[str, Any]:
        return {
            "tenant_id": doc.tenant_id,
            "owner_id": doc.owner_id or doc.tenant_id,
            "document_id": doc.document_id,
            "source": doc.source,
            "source_type": content_type,
            "chunk_index": chunk.index,
            "chunk_hash": chunk.hash,
            "doc_hash": digest,
            "token_count": chunk.token_count,
            "content": chunk.text,
            "indexed_at": now,
            "metadata": {**metadata, **chunk.metadata},
        }


def _without_content(payload: dict[str, Any]) -> dict[str, Any]:
    # Unchanged chunks keep their text; only positional and document-level fields are refreshed.
    return {k: v for k, v in payload.items() if k != "content"}


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
