"""The Freki engine: wires parse → chunk → embed → store → retrieve and exposes operations.

The gRPC servicer, the folder watcher and the benchmarks all drive this one object, so
they share the same model, store handles and caches.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

from freki.embed.embedder import Embedder
from freki.embed.layout import EmbeddingLayout
from freki.embed.sparse import Bm25Params, SparseEncoder
from freki.engine import models
from freki.engine.config import build_embedder, ingest_limits, master_key, sandbox_config, store_config
from freki.engine.graph import EngineGraph
from freki.engine.models import EngineStatus, ModelLane
from freki.graph.store import LinkStore
from freki.ingest.caches import TokenCountCache, embed_in_slices
from freki.ingest.chunking import SemanticChunker
from freki.ingest.deadline import NO_DEADLINE, Deadline
from freki.ingest.indexing import (
    CHUNK_SEALED_FIELDS,
    Indexer,
    IndexInput,
    IndexResult,
    document_chunks,
)
from freki.ingest.lanes import IndexLane
from freki.ingest.limits import ChunkingConfig
from freki.ingest.registry import RECORD_SEALED_FIELDS, DocumentRecord, DocumentRegistry, generation_age_s
from freki.ingest.repair import RepairReport, repair
from freki.ingest.sandbox import ParserSandbox
from freki.search.rerank import CrossEncoderReranker
from freki.search.result_cache import ResultCache, hit_bytes
from freki.search.retrieval import Hits, Query, RetrievalConfig, Retriever
from freki.settings import FrekiSettings
from freki.store import ChunkPoint, FieldMatch, StoredPoint, VectorStore, make_store
from freki.store.keys import KeyStore
from freki.store.maintenance import Maintenance
from freki.store.rwlock import ReadWriteLock
from freki.store.sealed import Generations, SealedStore
from wolf_service.errors import NotFound
from wolf_service.faults import fault_point
from wolf_service.tokens import get_token_counter

log = logging.getLogger("freki.engine")


class FrekiEngine:
    """Everything Freki does, independent of transport."""

    def __init__(self, settings: FrekiSettings, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.embedder = embedder or build_embedder(settings)
        store_cfg = store_config(settings)
        seal = settings.gdpr.encrypt_payloads
        self.keys = KeyStore(settings.gdpr.keys_path or Path(settings.data_dir) / "keys.sqlite",
                             master_key=master_key(settings))
        # store.shared: other replicas write this collection (docs/scaling.md)
        grace = settings.store.orphan_grace_s if settings.store.shared else None
        self.generations = Generations()


        def open_chunks() -> SealedStore:
            return SealedStore(make_store(store_cfg), self.keys, CHUNK_SEALED_FIELDS if seal else (),
                               self.generations)

        self.chunks = open_chunks()
        self.chunks.ensure_collection(models.chunk_collection_spec(settings, settings.store.collection, self.embedder))
        # Type-specific models (docs/embedding-models.md): the layout asked for, and the one served.
        self.configured_layout = EmbeddingLayout.from_routes(
            self.embedder.identity.name, settings.embedding_models, settings.store.collection)
        self.lanes: list[ModelLane]
        self.lanes, self.layout = models.open_model_lanes(
            settings, self.configured_layout, lambda model: build_embedder(settings, model), open_chunks)
        self._registry_store = SealedStore(make_store(store_cfg), self.keys, RECORD_SEALED_FIELDS if seal else ())
        self.registry = DocumentRegistry(self._registry_store, f"{settings.store.collection}_documents")
        self._links_store = make_store(store_cfg)  # the knowledge graph's links (freki.graph.store)
        links = LinkStore(self._links_store, f"{settings.store.collection}_links", self.registry.committed)
        if grace is not None:
            for store in self.chunk_stores:
                store.committed = self.registry.committed
        self._stopping = threading.Event()
        # Index calls share it; an erasure takes it alone, so no document of the owner is half-written meanwhile.
        self._erasing = ReadWriteLock()
        self._purge_marker = Path(settings.data_dir) / ".purge-pending"
        self._purge_lock, self._purge_guard = threading.Lock(), threading.Lock()
        self._purge_requests = self._purged_upto = 0
        self.repair_report: RepairReport = repair(
            self.chunk_stores, self.registry, self.keys, grace, settings.gdpr.drop_records_without_keys,
            models={self.embedder.identity.name, *(lane.model for lane in self.lanes)})
        if orphans := links.remove_orphans(lambda g: grace is None or generation_age_s(g) > grace):
            self.repair_report.counts["orphan_link_points"] += orphans
        if self._purge_marker.exists():  # an erasure was interrupted before its purge finished
            self.purge()
        cfg = settings.chunking
        self.chunking = ChunkingConfig(
            max_tokens=cfg.max_tokens, min_tokens=cfg.min_tokens,
            overlap_tokens=cfg.overlap_tokens, similarity_threshold=cfg.similarity_threshold,
            boundary_signal=cfg.boundary_signal,
        )
        counter = TokenCountCache(get_token_counter().count)
        rs = settings.retrieval
        self.sparse = SparseEncoder(Bm25Params(k1=rs.bm25_k1, b=rs.bm25_b, avgdl=rs.bm25_avgdl))
        if rs.query_batch_max > 1:
            for embedder in self.embedders:
                embedder.enable_batching(rs.query_batch_max, rs.query_batch_wait_ms / 1000)

        def chunker_factory(embedder: Embedder):  # type: ignore[no-untyped-def]
            window_tokens = TokenCountCache(embedder.window_tokens)

            def make_chunker(embed):  # type: ignore[no-untyped-def]
                return SemanticChunker(self.chunking, counter, embed, window_tokens, embedder.max_seq_length)
            return make_chunker

        make_chunker = chunker_factory(self.embedder)
        effective = make_chunker(self.embedder.embed).effective
        log.info("chunking: configured %s, effective %s (model window %d word-pieces)",
                 self.chunking, effective, self.embedder.max_seq_length)
        self.sandbox = ParserSandbox(sandbox_config(settings))
        self.graph = EngineGraph(settings, links, self.chunks, self.embedder.embed_query, self.sparse)
        self.results = ResultCache(0 if settings.store.shared else rs.result_cache_bytes)
        self.indexer = Indexer(
            embedder=self.embedder,
            make_chunker=make_chunker,
            chunks=self.chunks,
            registry=self.registry,
            generations=self.generations,
            keys=self.keys,
            sparse_encode=self.sparse,
            full_reindex_ratio=settings.full_reindex_ratio,
            chunking_fingerprint=f"{effective!r} sparse={self.sparse.fingerprint} links=1",
            sandbox=self.sandbox,
            limits=ingest_limits(settings),
            shared_grace_s=grace,
            on_change=self.results.invalidate,
            companion=self.graph.links,
            lanes=[IndexLane(lane.model, lane.embedder, chunker_factory(lane.embedder), lane.chunks)
                   for lane in self.lanes],
            layout=self.layout,
        )
        self.maintenance = Maintenance(self.purge, settings.store.maintenance_interval_s)
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
            lanes=models.search_lanes(self.embedder, self.lanes),
            model=self.embedder.identity.name,
        )

    @property
    def embedders(self) -> list[Embedder]:
        """Every embedding model in use, the standard one first."""
        return [self.embedder, *(lane.embedder for lane in self.lanes)]

    @property
    def chunk_stores(self) -> list[SealedStore]:
        """Every model's chunk collection, the standard one first."""
        return [self.chunks, *(lane.chunks for lane in self.lanes)]

    # -- documents -------------------------------------------------------------------------
    def index(self, doc: IndexInput, deadline: Deadline = NO_DEADLINE) -> IndexResult:
        """Index or re-index one document; stops (writing nothing) when ``deadline`` passes or Freki stops."""
        deadline = deadline.with_stop(self._stopping, "the server is shutting down")
        with self._erasing.read():
            result = self.indexer.index(doc, deadline)
        if result.outcome == "updated":
            self.maintenance.touch()
        return result

    def retrieve(self, query: Query) -> Hits:
        """Search within the query's tenant (answered from the result cache when it can be)."""
        return self.results.lookup(query.tenant_id, repr(query),
                                   lambda: self.graph.after_retrieval(query, self.retriever.retrieve(query)),
                                   lambda hit: hit_bytes(hit.payload))

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord:
        """A document's record, or NotFound."""
        record = self.registry.get(tenant, document_id)
        if record is None:
            raise NotFound(f"document {document_id!r} is not indexed for tenant {tenant!r}")
        return record

    def delete_document(self, tenant: str, document_id: str, *, erase: bool = False) -> int:
        """Delete every chunk of a document (whether or not the registry knows it), its record, keys and
        cached vectors; returns chunks deleted. ``erase``: also purge the engine's files before returning
        (``gdpr.purge_on_erase``). NotFound when there was nothing at all."""
        if erase:
            self._mark_purge()
        with self.indexer.document_lock(tenant, document_id):
            known = self.registry.get(tenant, document_id) is not None
            deleted = self.indexer.committer.delete(tenant, document_id)
            self.indexer.sentence_cache.forget(tenant, document_id)
        if not known and not deleted:
            self._purge_marker.unlink(missing_ok=True)
            raise NotFound(f"document {document_id[:200]!r} is not indexed for tenant {tenant!r}")
        self.maintenance.touch()
        if erase:
            self._erase_purge()
        return deleted

    def chunks_of(self, tenant: str, document_id: str, *, with_vectors: bool = False) -> list[StoredPoint]:
        """A document's chunks in order (from its embedding model's collection)."""
        record = self.registry.get(tenant, document_id)
        stores = [self.store_of(record.embedding_model)] if record else self.chunk_stores
        return [p for store in stores for p in document_chunks(store, tenant, document_id, with_vectors=with_vectors)]

    def store_of(self, model: str) -> VectorStore:
        """The collection of ``model``'s chunks (the standard one for a model not loaded)."""
        return self.indexer.router.store_of(model)

    def full_reindex(self, tenant: str, document_id: str = "") -> tuple[int, int]:
        """Re-embed stored chunk texts with each document's model; returns (documents, chunks)."""
        records = [self.get_document(tenant, document_id)] if document_id else list(self.registry.iterate(tenant))
        chunks_done = 0
        for record in records:
            doc_id = record.document_id
            lane = self.indexer.router.lanes.get(record.embedding_model, self.indexer.router.standard)
            points = document_chunks(lane.chunks, tenant, doc_id)
            vectors = embed_in_slices(lane.embedder.embed, [str(p.payload.get("content", "")) for p in points])
            sparse = self.indexer.sparse_of_points(points)
            lane.chunks.upsert([
                ChunkPoint(id=p.id, dense=v.tolist(), sparse=s, payload=p.payload)
                for p, v, s in zip(points, vectors, sparse, strict=True)
            ])
            chunks_done += len(points)
            self.results.invalidate(tenant)
        return len(records), chunks_done

    # -- GDPR ------------------------------------------------------------------------------
    def delete_owner(self, tenant: str, owner_id: str, records: list[DocumentRecord]) -> tuple[int, int]:
        """Erase every document of a data owner; ``records`` are the owner's registry records, listed by
        the caller (which needs them first, see ``freki.gdpr``). Returns (documents, chunks) deleted.

        Waits for index calls in progress; the owner's keys are destroyed (their text is shredded) and,
        with ``gdpr.purge_on_erase``, the engine's files are purged before this returns."""
        self._mark_purge()
        with self._erasing.write():
            for record in records:
                self.generations.hide(record.generation)
            try:
                self.registry.delete_owner(tenant, owner_id)
                fault_point("erase.records_deleted")
                owner = [FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))]
                chunks = sum(store.delete_where(owner) for store in self.chunk_stores)
                self.graph.links.delete_owner(tenant, owner_id)
                self.keys.destroy_owner(tenant, owner_id)
            finally:
                for record in records:
                    self.generations.show(record.generation)
                self.results.invalidate(tenant)
            for record in records:
                self.indexer.sentence_cache.forget(tenant, record.document_id)
        self._erase_purge()
        return len(records), chunks

    def purge(self) -> bool:
        """Remove what deletes left in the engine's files (``VectorStore.purge``); False if the engine cannot.

        Concurrent callers share one run: a caller whose request came before a run started is served by it.
        The two collections are purged side by side."""
        with self._purge_guard:
            self._purge_requests += 1
            ticket = self._purge_requests
        with self._purge_lock:
            if self._purged_upto >= ticket:
                return True
            with self._purge_guard:
                covers = self._purge_requests
            registry = threading.Thread(target=self._registry_store.purge, name="freki-purge-registry")
            registry.start()
            try:
                done = all([store.purge() for store in [*self.chunk_stores, self._links_store]])
            finally:
                registry.join()
            self._purged_upto = covers
            self._purge_marker.unlink(missing_ok=True)
            return done

    def _erase_purge(self) -> None:
        if self.settings.gdpr.purge_on_erase:
            self.purge()

    def _mark_purge(self) -> None:
        if self.settings.gdpr.purge_on_erase:
            self._purge_marker.parent.mkdir(parents=True, exist_ok=True)
            self._purge_marker.touch()

    def export_owner(self, tenant: str, owner_id: str, *, with_vectors: bool = False) -> Iterator[
        tuple[DocumentRecord, list[StoredPoint]]
    ]:
        """Each document of a data owner with its chunks, one document at a time (bounded memory)."""
        for record in self.registry.iterate(tenant, owner_id=owner_id):
            yield record, self.chunks_of(tenant, record.document_id, with_vectors=with_vectors)

    # -- status ----------------------------------------------------------------------------
    def status(self, tenant: str | None) -> EngineStatus:
        """Counts for one tenant (or all) and the configuration in force."""
        statuses = models.model_statuses(self.configured_layout, self.embedder, self.chunks, self.lanes, self.registry,
                                tenant)
        return EngineStatus(
            document_count=self.registry.count(tenant),
            chunk_count=sum(m.chunk_count for m in statuses),
            embedding_model=self.embedder.identity.name,
            embedding_dimension=self.embedder.dimension,
            store_backend=self.chunks.backend,
            collection=self.settings.store.collection,
            models=tuple(statuses),
        )

    def stop_work(self) -> None:
        """Make index calls in progress stop at their next check (kills parser workers); for shutdown."""
        self._stopping.set()
        self.sandbox.close()

    def close(self) -> None:
        """Stop work in progress, then flush and release the stores and the key store."""
        self.stop_work()
        self.maintenance.stop()
        for store in self.chunk_stores:
            store.close()
        self._registry_store.close()
        self._links_store.close()
        self.keys.close()



__all__ = ["EngineStatus", "FrekiEngine", "build_embedder", "store_config"]
