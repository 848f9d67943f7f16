"""Indexing pipeline: parse (in the sandbox) → check limits → chunk → embed what changed → commit.

A new version of a document is written as a new *generation* and committed atomically
(``freki.ingest.commit``): readers see the old version until the registry record of the new one is written,
then the new one whole. Chunks whose text did not change are not re-embedded: their vectors are copied
from the previous generation. When more than ``full_reindex_ratio`` of the chunks changed, every chunk is
re-embedded. The caller's ``Deadline`` is checked between stages and embedding batches; work stopped
before the commit leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from freki.embed.layout import DOCUMENT_TYPE_KEY, EmbeddingLayout
from freki.embed.model import EmbeddingModel
from freki.embed.sparse import SparseEncoder
from freki.ingest import lexical
from freki.ingest.caches import SentenceVectorCache, embed_in_slices
from freki.ingest.chunk_payload import chunk_payload, lexical_text  # noqa: F401 - lexical_text re-exported
from freki.ingest.chunking import Chunk
from freki.ingest.commit import Committer, Companion, document_filter  # noqa: F401 - re-exported
from freki.ingest.deadline import NO_DEADLINE, Deadline, abandonment_logged
from freki.ingest.index_io import IndexInput, IndexResult, IngestLimits  # noqa: F401 - re-exported
from freki.ingest.lanes import ChunkerFactory, ChunkProfiles, IndexLane, LaneRouter
from freki.ingest.locks import LockTable
from freki.ingest.parsing import ParsedDocument, parse_document
from freki.ingest.quotas import check_chunk_count, check_metadata
from freki.ingest.registry import DocumentRecord, DocumentRegistry, chunk_point_id, new_generation
from freki.ingest.sandbox import ParserSandbox
from freki.ingest.sources import KeptSource, SourceStore
from freki.store import ChunkPoint, SparseVector, StoredPoint, VectorStore, scroll_pages
from freki.store.keys import KeyStore
from freki.store.metadata import Metadata
from freki.store.sealed import Generations
from wolf_service.errors import InvalidArgument

# Judges, under a document's lock, whether a write may replace its committed version (None: there is none).
WriteGuard = Callable[[DocumentRecord | None], None]
log = logging.getLogger("freki.indexing")
# Chunk payload fields sealed per generation (freki.store.sealed). The others stay plain because the engine
# filters on them: tenant, owner, document, generation, source type, chunk index and the caller's metadata.
CHUNK_SEALED_FIELDS = ("content", "source", "chunk_hash", "doc_hash")


def document_chunks(
    store: VectorStore, tenant: str, document_id: str, *, with_vectors: bool = False
) -> list[StoredPoint]:
    """Every stored chunk of one document, in chunk order, paging through the store."""
    pages = scroll_pages(store, document_filter(tenant, document_id), 512, with_vectors=with_vectors)
    return sorted((p for page in pages for p in page), key=lambda p: int(p.payload.get("chunk_index", 0)))


class Indexer:
    """Turns documents into stored, searchable chunks."""

    def __init__(
        self,
        *,
        embedder: EmbeddingModel,
        make_chunker: ChunkerFactory,
        chunks: VectorStore,
        registry: DocumentRegistry,
        generations: Generations,
        keys: KeyStore,
        sparse_encode: SparseEncoder | lexical.SparseEncode | None = None,
        full_reindex_ratio: float = 0.5,
        chunking_fingerprint: str = "",
        sentence_cache: SentenceVectorCache | None = None,
        sandbox: ParserSandbox | None = None,
        limits: IngestLimits | None = None,
        shared_grace_s: float | None = None,
        on_change: Callable[[str], None] | None = None,
        companion: Companion | None = None,
        lanes: Sequence[IndexLane] = (),
        layout: EmbeddingLayout | None = None,
        sources: SourceStore | None = None,
        chunk_profiles: ChunkProfiles | None = None,
    ) -> None:
        """``embedder``, ``make_chunker`` and ``chunks`` make the standard model's lane; ``lanes`` are the
        type-specific models' and ``layout`` routes document types to them (``freki.ingest.lanes``)."""
        self._embedder = embedder
        self.router = LaneRouter([IndexLane(embedder.identity.name, embedder, make_chunker, chunks), *lanes],
                                 layout)
        self._registry = registry
        self._sparse = sparse_encode
        self._full_ratio = full_reindex_ratio
        self._fingerprint = chunking_fingerprint
        self.chunk_profiles = chunk_profiles
        self.sentence_cache = sentence_cache or SentenceVectorCache()
        self.sandbox = sandbox
        self.limits = limits or IngestLimits()
        self.sources = sources
        self.committer = Committer(chunks, registry, generations, keys, shared_grace_s=shared_grace_s,
                                   on_change=on_change, companion=companion, store_of=self.router.store_of,
                                   stores=self.router.stores, sources=sources)
        self._locks = LockTable()

    def sparse_of_points(self, points: Sequence[StoredPoint]) -> list[SparseVector | None]:
        """Sparse vectors of stored chunks' texts, each without its overlap and in its recorded language (as
        when it was indexed); Nones when no sparse encoder is configured."""
        return lexical.vectors_of_points(self._sparse, [lexical_text(p.payload) for p in points],
                                 [p.payload for p in points])

    def document_lock(self, tenant: str, document_id: str) -> Any:
        """The lock ``index`` holds for a document (a context manager); hold it to change the document otherwise."""
        return self._locks.hold((tenant, document_id))

    def content_hash(self, doc: IndexInput) -> str:
        """Hash of everything that determines the stored chunks of a document."""
        h = hashlib.sha256()
        h.update(doc.data if isinstance(doc.data, bytes) else doc.data.encode("utf-8", "surrogatepass"))
        parts = [doc.content_type, doc.source, doc.owner_id, sorted(doc.metadata.items()),
                 self._fingerprint, self.router.layout.fingerprint()]
        if self.chunk_profiles is not None and (profiles := self.chunk_profiles.fingerprint()):
            parts.append(f"types={profiles}")
        if isinstance(self._sparse, SparseEncoder) and self._sparse.term_scope(doc.tenant_id):
            parts.append("terms=tenant")  # the tenant's own term space (freki.embed.sparse)
        if doc.access_groups:  # new groups must reach every stored point, so they make the document "changed"
            parts.append("access_groups=" + ",".join(sorted(doc.access_groups)))
        h.update(json.dumps(parts).encode())
        return h.hexdigest()

    def index(self, doc: IndexInput, deadline: Deadline = NO_DEADLINE, *,
              expect_generation: str | None = None, guard: WriteGuard | None = None) -> IndexResult:
        """Index or re-index one document; a no-op when its content is unchanged.

        ``expect_generation``: only if the committed version is still this one (FullReindex from a kept
        source); otherwise nothing is written and the outcome is "superseded".
        ``guard``: called with the committed version (None if there is none) under the document's lock, before
        anything else; it raises to refuse the write. Under the lock, so no other write can change what it
        judged (the caller's right to replace that version) before this write commits.

        Raises:
            DocumentError / InvalidArgument: the document is refused (the message names the limit).
            DeadlineExceeded / Cancelled: ``deadline`` passed first; nothing was written.
        """
        started = time.perf_counter()
        key = (doc.tenant_id, doc.document_id)
        with self.document_lock(*key), abandonment_logged(deadline, doc.document_id):
            digest = self.content_hash(doc)
            existing = self._registry.get(doc.tenant_id, doc.document_id)
            if guard is not None:
                guard(existing)
            if expect_generation is not None and (existing is None or existing.generation != expect_generation):
                return IndexResult(doc.document_id, "superseded", 0, 0, 0, 0, False, digest, _ms(started))
            if existing and existing.content_hash == digest and not doc.force_full_reindex:
                return IndexResult(doc.document_id, "unchanged", existing.chunk_count, 0,
                                   existing.chunk_count, 0, False, digest, _ms(started))
            deadline.check("waiting for the document")
            parsed = self._parse(doc, deadline)
            metadata = {**parsed.metadata, **doc.metadata}
            if parsed.title and "title" not in metadata:
                metadata["title"] = parsed.title[:1000]
            check_metadata(metadata, self.limits.metadata, field=f"metadata of document {doc.document_id[:80]!r}")
            deadline.check("parsing")

            lane, document_type = self.router.route(parsed.content_type, metadata)

            def embed(texts: Sequence[str]) -> np.ndarray:
                deadline.check("embedding sentences")  # between the model's batches (embed_in_slices)
                return lane.embedder.embed(texts, tenant=doc.tenant_id)

            profiles = self.chunk_profiles
            profile = profiles.profile_of(metadata.get(DOCUMENT_TYPE_KEY)) if profiles is not None else None
            sentences = self.sentence_cache.embedder_for(key, embed, lane.model)
            chunker = lane.make_chunker(sentences, profile) if profile else lane.make_chunker(sentences)
            # Cheap limits before planning: every word is at least one token of some chunk.
            words = sum(len(section.text.split()) for section in parsed.sections)
            check_chunk_count(-(-words // chunker.effective.max_tokens), self.limits.max_chunks, doc.document_id,
                              estimated=True)
            chunks = chunker.chunk(parsed, max_chunks=self.limits.max_chunks, check=deadline.check)
            check_chunk_count(len(chunks), self.limits.max_chunks, doc.document_id)
            if not chunks:
                raise InvalidArgument(
                    f"document {doc.document_id[:80]!r} ({doc.source[:200] or 'no source'}) has no text to index"
                )
            return self._write(doc, parsed, metadata, chunks, digest, existing, started, deadline,
                               lane, document_type)

    def _parse(self, doc: IndexInput, deadline: Deadline) -> ParsedDocument:
        if self.sandbox is not None:
            return self.sandbox.parse(doc.data, source=doc.source, content_type=doc.content_type, deadline=deadline)
        return parse_document(doc.data, source=doc.source, content_type=doc.content_type, limits=self.limits.parse)

    def _write(
        self, doc: IndexInput, parsed: ParsedDocument, metadata: Metadata, chunks: list[Chunk],
        digest: str, existing: DocumentRecord | None, started: float, deadline: Deadline,
        lane: IndexLane, document_type: str,
    ) -> IndexResult:
        # Vectors are reused only from the same model's collection: a document moving to another model
        # is embedded whole (its old chunks, elsewhere, go when the new version is committed).
        old = self._old_chunks(doc, existing)
        moved = existing is not None and existing.embedding_model != lane.model
        old_vectors = [] if moved else old
        reusable: dict[str, list[float]] = {}
        for point in old_vectors:
            if point.dense is not None:
                reusable.setdefault(str(point.payload.get("chunk_hash", "")), point.dense)
        new_positions = [i for i, c in enumerate(chunks) if c.hash not in reusable]
        full = doc.force_full_reindex or moved or (
            existing is not None and len(new_positions) > self._full_ratio * len(chunks)
        )
        embed_positions = list(range(len(chunks))) if full else new_positions

        def embed(texts: Sequence[str]) -> np.ndarray:
            deadline.check("embedding chunks")
            return lane.embedder.embed(texts, tenant=doc.tenant_id)

        vectors = embed_in_slices(embed, [chunks[i].text for i in embed_positions])
        fresh = {i: vectors[j].tolist() for j, i in enumerate(embed_positions)}
        dense = [fresh[i] if i in fresh else reusable[c.hash] for i, c in enumerate(chunks)]
        deadline.check("embedding chunks")
        self._commit(doc, parsed, metadata, chunks, dense, digest, existing, lane, document_type, deadline)
        new_hashes = {c.hash for c in chunks}
        return IndexResult(
            document_id=doc.document_id,
            outcome="updated" if existing else "created",
            chunk_count=len(chunks),
            chunks_embedded=len(embed_positions),
            chunks_unchanged=len(chunks) - len(embed_positions),
            chunks_deleted=sum(1 for p in old if p.payload.get("chunk_hash") not in new_hashes),
            full_reindex=bool(full and existing),
            content_hash=digest,
            duration_ms=_ms(started),
        )

    def index_embedded(self, doc: IndexInput, parsed: ParsedDocument, chunks: list[Chunk],
                       dense: Sequence[Sequence[float]], metadata: Metadata) -> IndexResult:
        """Store chunks whose dense vectors were made elsewhere (an import): no parsing, chunking or embedding,
        only the BM25 vectors are computed. The caller has checked that the vectors are the document's lane's
        model's (``router.route``); ``parsed`` is what FullReindex keeps and links come from."""
        started = time.perf_counter()
        with self.document_lock(doc.tenant_id, doc.document_id):
            digest = self.content_hash(doc)
            existing = self._registry.get(doc.tenant_id, doc.document_id)
            if existing and existing.content_hash == digest:
                return IndexResult(doc.document_id, "unchanged", existing.chunk_count, 0,
                                   existing.chunk_count, 0, False, digest, _ms(started))
            check_metadata(metadata, self.limits.metadata, field=f"metadata of document {doc.document_id[:80]!r}")
            check_chunk_count(len(chunks), self.limits.max_chunks, doc.document_id)
            lane, document_type = self.router.route(parsed.content_type, metadata)
            old = self._old_chunks(doc, existing)
            self._commit(doc, parsed, metadata, chunks, [list(v) for v in dense], digest, existing, lane,
                         document_type, NO_DEADLINE)
            return IndexResult(doc.document_id, "updated" if existing else "created", len(chunks), 0, 0,
                               len(old), False, digest, _ms(started))

    def _commit(self, doc: IndexInput, parsed: ParsedDocument, metadata: Metadata, chunks: list[Chunk],
                dense: list[list[float]], digest: str, existing: DocumentRecord | None, lane: IndexLane,
                document_type: str, deadline: Deadline) -> None:
        """BM25 vectors, points and registry record of a new version of ``doc``; committed."""
        sparse = lexical.lexical_passages(self._sparse, [c.new_text for c in chunks],  # overlap is BM25-indexed once
                                          declared=metadata.get("language", ""),
                                          groups=[c.metadata.get("section", "") for c in chunks], tenant=doc.tenant_id)
        deadline.check("embedding chunks")
        generation, content_type = new_generation(), parsed.content_type
        now = datetime.now(UTC).isoformat()
        owner = doc.owner_id or doc.tenant_id
        points = [
            ChunkPoint(
                id=chunk_point_id(doc.tenant_id, doc.document_id, generation, i),
                dense=dense[i],
                sparse=lexical.vector_of(sparse[i]),
                payload={**chunk_payload(tenant=doc.tenant_id, document_id=doc.document_id, source=doc.source,
                                         owner=owner, content_type=content_type, metadata=metadata, chunk=c,
                                         digest=digest, now=now, generation=generation,
                                         access_groups=doc.access_groups),
                         **lexical.chunk_fields(sparse[i])},
            )
            for i, c in enumerate(chunks)
        ]
        record = DocumentRecord(
            tenant_id=doc.tenant_id, document_id=doc.document_id, owner_id=owner, source=doc.source,
            content_type=content_type, content_hash=digest, chunk_count=len(chunks), indexed_at=now,
            embedding_model=lane.model, metadata=metadata, generation=generation,
            embedding_dimension=lane.embedder.dimension, document_type=document_type,
            languages=lexical.document_languages(sparse),
            access_groups=sorted(doc.access_groups),
        )
        source = self.sources.points(doc.tenant_id, owner, doc.document_id, generation, KeptSource(
            doc.data, doc.source, doc.content_type, doc.metadata, doc.owner_id)) if self.sources is not None else []
        self.committer.commit(points, record, existing, stage="update" if existing else "create",
                              links=parsed.links, source=source)

    def _old_chunks(self, doc: IndexInput, existing: DocumentRecord | None) -> list[StoredPoint]:
        if existing is None:
            return []
        store = self.router.store_of(existing.embedding_model)
        return document_chunks(store, doc.tenant_id, doc.document_id, with_vectors=True)


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
