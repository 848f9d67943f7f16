"""The Freki engine: wires parse → chunk → embed → store → retrieve and exposes operations.

The gRPC servicer, the folder watcher and the benchmarks all drive this one object, so
they share the same model, store handles and caches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from freki.embed.embedder import Embedder
from freki.embed.sparse import Bm25Params, SparseEncoder
from freki.ingest.caches import TokenCountCache, embed_in_slices
from freki.ingest.chunking import SemanticChunker
from freki.ingest.indexing import Indexer, IndexInput, IndexResult, document_chunks, document_filter
from freki.ingest.limits import ChunkingConfig
from freki.ingest.registry import DocumentRecord, DocumentRegistry
from freki.search.rerank import CrossEncoderReranker
from freki.search.retrieval import Hit, Query, RetrievalConfig, Retriever
from freki.settings import FrekiSettings
from freki.store import (
    ChunkPoint,
    CollectionSpec,
    FieldMatch,
    StoreConfig,
    StoredPoint,
    VectorStore,
    make_store,
)
from wolf_service.errors import NotFound
from wolf_service.tokens import get_token_counter

log = logging.getLogger("freki.engine")


@dataclass(frozen=True)
class EngineStatus:
    """Counts and configuration reported by GetIndexStatus."""

    document_count: int
    chunk_count: int
    embedding_model: str
    embedding_dimension: int
    store_backend: str
    collection: str


class FrekiEngine:
    """Everything Freki does, independent of transport."""

    def __init__(self, settings: FrekiSettings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.embedder = embedder or build_embedder(settings)
        store_cfg = store_config(settings)
        self.chunks: VectorStore = make_store(store_cfg)
        self.chunks.ensure_collection(CollectionSpec(
            name=settings.store.collection,
            dense_dim=self.embedder.dimension,
            embedding_model=self.embedder.identity.name,
        ))
        self._registry_store: VectorStore = make_store(store_cfg)
        self.registry = DocumentRegistry(self._registry_store, f"{settings.store.collection}_documents")
        cfg = settings.chunking
        self.chunking = ChunkingConfig(
            max_tokens=cfg.max_tokens, min_tokens=cfg.min_tokens,
            overlap_tokens=cfg.overlap_tokens, similarity_threshold=cfg.similarity_threshold,
        )
        counter = TokenCountCache(get_token_counter().count)
        rs = settings.retrieval
        self.sparse = SparseEncoder(Bm25Params(k1=rs.bm25_k1, b=rs.bm25_b, avgdl=rs.bm25_avgdl))
        if rs.query_batch_max > 1:
            self.embedder.enable_batching(rs.query_batch_max, rs.query_batch_wait_ms / 1000)

        window_tokens = TokenCountCache(self.embedder.window_tokens)

        def make_chunker(embed):  # type: ignore[no-untyped-def]
            return SemanticChunker(self.chunking, counter, embed, window_tokens, self.embedder.max_seq_length)

        effective = make_chunker(self.embedder.embed).effective
        log.info("chunking: configured %s, effective %s (model window %d word-pieces)",
                 self.chunking, effective, self.embedder.max_seq_length)
        self.indexer = Indexer(
            embedder=self.embedder,
            make_chunker=make_chunker,
            chunks=self.chunks,
            registry=self.registry,
            sparse_encode=self.sparse,
            full_reindex_ratio=settings.full_reindex_ratio,
            chunking_fingerprint=f"{effective!r} sparse={self.sparse.fingerprint}",
        )
        self.retriever = Retriever(
            embed_query=self.embedder.embed_query,
            chunks=self.chunks,
            sparse=self.sparse,
            config=RetrievalConfig(
                fusion=rs.fusion, sparse_weight=rs.sparse_weight, sparse_half_score=rs.sparse_half_score,
                candidates=rs.candidates, rrf_k=rs.rrf_k, rerank_candidates=rs.rerank_candidates,
            ),
            reranker=CrossEncoderReranker(rs.reranker_model, device=settings.embedding_device)
            if rs.reranker_model else None,
        )

    # -- documents -------------------------------------------------------------------------
    def index(self, doc: IndexInput) -> IndexResult:
        """Index or re-index one document."""
        return self.indexer.index(doc)

    def retrieve(self, query: Query) -> list[Hit]:
        """Search within the query's tenant."""
        return self.retriever.retrieve(query)

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord:
        """A document's record, or NotFound."""
        record = self.registry.get(tenant, document_id)
        if record is None:
            raise NotFound(f"document {document_id!r} is not indexed for tenant {tenant!r}")
        return record

    def delete_document(self, tenant: str, document_id: str) -> int:
        """Delete a document's chunks, record and cached vectors; returns chunks deleted."""
        self.get_document(tenant, document_id)
        deleted = self.chunks.delete_where(document_filter(tenant, document_id))
        self.registry.delete(tenant, document_id)
        self.indexer.sentence_cache.forget(tenant, document_id)
        return deleted

    def chunks_of(self, tenant: str, document_id: str, *, with_vectors: bool = False) -> list[StoredPoint]:
        """A document's chunks in order."""
        return document_chunks(self.chunks, tenant, document_id, with_vectors=with_vectors)

    def full_reindex(self, tenant: str, document_id: str = "") -> tuple[int, int]:
        """Re-embed stored chunk texts with the current model; returns (documents, chunks)."""
        ids = [document_id] if document_id else [r.document_id for r in self.registry.iterate(tenant)]
        if document_id:
            self.get_document(tenant, document_id)
        chunks_done = 0
        for doc_id in ids:
            points = self.chunks_of(tenant, doc_id)
            vectors = embed_in_slices(self.embedder.embed, [str(p.payload.get("content", "")) for p in points])
            sparse = self.indexer.sparse_encode([str(p.payload.get("content", "")) for p in points])
            self.chunks.upsert([
                ChunkPoint(id=p.id, dense=v.tolist(), sparse=s, payload=p.payload)
                for p, v, s in zip(points, vectors, sparse, strict=True)
            ])
            chunks_done += len(points)
        return len(ids), chunks_done

    # -- GDPR ------------------------------------------------------------------------------
    def delete_owner(self, tenant: str, owner_id: str, records: list[DocumentRecord]) -> tuple[int, int]:
        """Erase every document of a data owner; ``records`` are the owner's registry records, listed by
        the caller (which needs them first, see ``freki.gdpr``). Returns (documents, chunks) deleted."""
        chunks = self.chunks.delete_where([FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))])
        self.registry.delete_owner(tenant, owner_id)
        for record in records:
            self.indexer.sentence_cache.forget(tenant, record.document_id)
        return len(records), chunks

    def export_owner(self, tenant: str, owner_id: str, *, with_vectors: bool = False) -> Iterator[
        tuple[DocumentRecord, list[StoredPoint]]
    ]:
        """Each document of a data owner with its chunks, one document at a time (bounded memory)."""
        for record in self.registry.iterate(tenant, owner_id=owner_id):
            yield record, self.chunks_of(tenant, record.document_id, with_vectors=with_vectors)

    # -- status ----------------------------------------------------------------------------
    def status(self, tenant: str | None) -> EngineStatus:
        """Counts for one tenant (or all) and the configuration in force."""
        chunk_filter = [FieldMatch("tenant_id", (tenant,))] if tenant else []
        return EngineStatus(
            document_count=self.registry.count(tenant),
            chunk_count=self.chunks.count(chunk_filter),
            embedding_model=self.embedder.identity.name,
            embedding_dimension=self.embedder.dimension,
            store_backend=self.chunks.backend,
            collection=self.settings.store.collection,
        )

    def close(self) -> None:
        """Flush and release the store."""
        self.chunks.close()
        self._registry_store.close()


def build_embedder(settings: FrekiSettings) -> Embedder:
    """The embedder a Freki server with ``settings`` uses."""
    return Embedder(
        settings.embedding_model, device=settings.embedding_device,
        batch_size=settings.embedding_batch_size, query_cache_size=settings.retrieval.query_cache_size,
        backend=settings.embedding_backend, cache_dir=settings.embedding_cache_dir,
        bulk_bf16=settings.embedding_bulk_bf16,
    )


def store_config(settings: FrekiSettings) -> StoreConfig:
    """Map Freki settings onto the store factory's config."""
    rrf_k = settings.retrieval.rrf_k  # hybrid RRF runs inside the store
    if settings.store.backend == "edge":
        return StoreConfig(
            backend="edge", data_dir=settings.data_dir / "qdrant", rrf_k=rrf_k,
            flush_writes=settings.store.flush_each_write, search_threads=settings.store.search_threads,
        )
    url = settings.store.url
    # ":memory:" and plain paths select qdrant-client's local mode (tests, tiny setups).
    if url == ":memory:":
        return StoreConfig(backend="remote", location=url, rrf_k=rrf_k)
    if "://" not in url:
        return StoreConfig(backend="remote", path=url, rrf_k=rrf_k)
    return StoreConfig(
        backend="remote", url=url, api_key=settings.store.api_key, timeout_s=settings.store.timeout_s,
        rrf_k=rrf_k,
    )
