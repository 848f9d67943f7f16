"""An *index*: the set of collections (chunks of the standard model and of each type-specific model, registry,
knowledge-graph links, kept sources) built with one embedding configuration, and the stages that write and
read them. ``build_index`` is the one factory; ``collection_names`` the one
naming rule; ``embedding_config`` the one comparison of "which model(s) built it" (a blue/green model
migration, ``freki.engine.blue_green``, builds a second index when it differs).

Version 0 keeps the names of releases before migrations (``<collection>``, ``<collection>_documents``,
``<collection>_links``, ``<collection>_sources``, ``<collection>__m<hash>`` per type-specific model); version
n > 0 is ``<collection>__v<n>`` with the same suffixes.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from freki.embed.layout import EmbeddingLayout, model_collections_prefix
from freki.embed.model import EmbeddingModel
from freki.embed.sparse import Bm25Params, SparseEncoder, lexical_config
from freki.engine import models
from freki.engine.config import ingest_limits, store_config
from freki.engine.document_types import chunk_profiles, type_weights
from freki.engine.graph import EngineGraph
from freki.engine.models import ModelLane
from freki.graph.store import LinkStore
from freki.ingest.caches import TokenCountCache
from freki.ingest.chunking import SemanticChunker
from freki.ingest.indexing import CHUNK_SEALED_FIELDS, Indexer
from freki.ingest.lanes import IndexLane
from freki.ingest.limits import ChunkingConfig
from freki.ingest.registry import RECORD_SEALED_FIELDS, DocumentRegistry
from freki.ingest.sandbox import ParserSandbox
from freki.ingest.sources import SOURCE_SEALED_FIELDS, SourceStore
from freki.search.rerank import CrossEncoderReranker
from freki.search.retrieval import RetrievalConfig, Retriever
from freki.settings import FrekiSettings
from freki.store import VectorStore, make_store
from freki.store.edge import EdgeStore
from freki.store.integrity import Quarantine
from freki.store.keys import KeyStore
from freki.store.migrate import recorded_spec
from freki.store.remote import RemoteStore
from freki.store.sealed import Generations, SealedStore
from wolf_service.tokens import get_token_counter

log = logging.getLogger("freki.engine")


@dataclass(frozen=True)
class CollectionNames:
    chunks: str
    registry: str
    sources: str
    links: str

    def all(self) -> tuple[str, str, str, str]:
        """The fixed names; type-specific models' collections are ``<chunks>__m<hash>`` (``freki.embed.layout``)."""
        return (self.chunks, self.registry, self.sources, self.links)


def collection_names(settings: FrekiSettings, version: int) -> CollectionNames:
    """The collections of index ``version``."""
    base = settings.store.collection if version == 0 else f"{settings.store.collection}__v{version}"
    return CollectionNames(base, f"{base}_documents", f"{base}_sources", f"{base}_links")


def embedding_config(settings: FrekiSettings) -> str:
    """What must match between the settings and an index for the index to serve them: the standard model.
    A change of ``embedding_models`` (type -> model) needs no new index: each document moves to its type's
    model's collection when it is re-indexed (FullReindex re-chunks every document through the same path)."""
    return settings.embedding_model


def built_with(settings: FrekiSettings, version: int) -> str | None:
    """The embedding configuration index ``version`` was built with, or None when it does not exist yet."""
    store = make_store(store_config(settings))
    try:
        spec = recorded_spec(store, collection_names(settings, version).chunks)  # type: ignore[arg-type]
    finally:
        store.close()
    return spec.embedding_model if spec is not None else None


@dataclass
class IndexSet:
    """One index's stores and the stages over them."""

    version: int
    names: CollectionNames
    embedder: EmbeddingModel
    generations: Generations
    chunks: SealedStore
    registry_store: SealedStore
    registry: DocumentRegistry
    sources: SourceStore | None
    sparse: SparseEncoder
    indexer: Indexer
    retriever: Retriever
    lanes: list[ModelLane]  # type-specific models that loaded
    configured_layout: EmbeddingLayout  # what the settings ask for
    layout: EmbeddingLayout  # what is served (models that failed to load left out)
    links_store: VectorStore
    graph: EngineGraph

    @property
    def model(self) -> str:
        return self.embedder.identity.name

    @property
    def chunk_stores(self) -> list[SealedStore]:
        """Every model's chunk collection, the standard one first."""
        return [self.chunks, *(lane.chunks for lane in self.lanes)]

    @property
    def embedders(self) -> list[EmbeddingModel]:
        """Every embedding model in use, the standard one first."""
        return [self.embedder, *(lane.embedder for lane in self.lanes)]

    def store_of(self, model: str) -> VectorStore:
        """The collection of ``model``'s chunks (the standard one for a model not loaded)."""
        return self.indexer.router.store_of(model)

    def close(self) -> None:
        for store in (*self.chunk_stores, self.registry_store, self.links_store,
                      *([self.sources.store] if self.sources else [])):
            store.close()


def build_index(
    settings: FrekiSettings, version: int, embedder: EmbeddingModel, keys: KeyStore, *,
    chunking: Callable[[], ChunkingConfig], sandbox: ParserSandbox, on_change: Callable[[str], None],
    reranker: CrossEncoderReranker | None = None, load_model: Callable[[str], EmbeddingModel],
    quarantine: Quarantine | None = None,
) -> IndexSet:
    """Open (creating if needed) index ``version`` with ``embedder`` as its standard model and ``load_model``
    for the type-specific ones. ``chunking()``: the chunking in force; ``quarantine``: where the chunk
    collections put points that fail their integrity check (``freki.store.integrity``)."""
    names = collection_names(settings, version)
    seal = settings.gdpr.encrypt_payloads
    cfg = store_config(settings)
    grace = settings.store.orphan_grace_s if settings.store.shared else None
    generations = Generations()

    def open_chunks() -> SealedStore:
        store = SealedStore(make_store(cfg), keys, CHUNK_SEALED_FIELDS if seal else (), generations)
        store.quarantine = quarantine
        return store

    chunks = open_chunks()
    chunks.ensure_collection(models.chunk_collection_spec(settings, names.chunks, embedder))
    # Type-specific models (docs/embedding-models.md): the layout asked for, and the one served.
    configured = EmbeddingLayout.from_routes(embedder.identity.name, settings.embedding_models, names.chunks)
    lanes, layout = models.open_model_lanes(settings, configured, load_model, open_chunks)
    registry_store = SealedStore(make_store(cfg), keys, RECORD_SEALED_FIELDS if seal else ())
    registry = DocumentRegistry(registry_store, names.registry)
    links_store = make_store(cfg)  # the knowledge graph's links (freki.graph.store)
    links = LinkStore(links_store, names.links, registry.committed)
    if grace is not None:
        for store in (chunks, *(lane.chunks for lane in lanes)):
            store.committed = registry.committed
    sources = SourceStore(SealedStore(make_store(cfg), keys, SOURCE_SEALED_FIELDS if seal else ()), names.sources,
                          settings.reindex.max_source_bytes) if settings.reindex.keep_sources else None
    counter = TokenCountCache(get_token_counter().count)
    rs = settings.retrieval
    sparse = SparseEncoder(Bm25Params(k1=rs.bm25_k1, b=rs.bm25_b, avgdl=rs.bm25_avgdl), lexical_config(rs.lexical),
                           shared_tenant=settings.default_tenant)
    if rs.query_batch_max > 1:
        for model in (embedder, *(lane.embedder for lane in lanes)):
            model.enable_batching(rs.query_batch_max, rs.query_batch_wait_ms / 1000)

    def chunker_factory(model: EmbeddingModel):  # type: ignore[no-untyped-def]
        window_tokens = TokenCountCache(model.window_tokens)

        def make_chunker(embed, config=None):  # type: ignore[no-untyped-def]
            return SemanticChunker(config or chunking(), counter, embed, window_tokens, model.max_seq_length)
        return make_chunker

    make_chunker = chunker_factory(embedder)
    effective = make_chunker(embedder.embed).effective
    log.info("index %s (%s): chunking configured %s, effective %s (model window %d word-pieces)", names.chunks,
             embedder.identity.name, chunking(), effective, embedder.max_seq_length)
    indexer = Indexer(
        embedder=embedder, make_chunker=make_chunker, chunks=chunks, registry=registry, generations=generations,
        keys=keys, sparse_encode=sparse, full_reindex_ratio=settings.full_reindex_ratio,
        chunking_fingerprint=f"{effective!r} sparse={sparse.fingerprint} links=1", sandbox=sandbox,
        limits=ingest_limits(settings), shared_grace_s=grace, on_change=on_change, sources=sources,
        companion=links, layout=layout, chunk_profiles=chunk_profiles(settings, chunking),
        lanes=[IndexLane(lane.model, lane.embedder, chunker_factory(lane.embedder), lane.chunks) for lane in lanes],
    )
    if quarantine is not None:  # a deleted or erased document leaves the kept quarantine list too
        indexer.sentence_cache.on_forget.append(quarantine.forget)
    standard_alignment, search_lanes = models.search_lanes(embedder, lanes)
    retriever = Retriever(
        embed_query=embedder.embed_query, chunks=chunks, sparse=sparse, calibrate=standard_alignment,
        config=RetrievalConfig(
            fusion=rs.fusion, sparse_weight=rs.sparse_weight, sparse_half_score=rs.sparse_half_score,
            candidates=rs.candidates, rrf_k=rs.rrf_k, rerank_candidates=rs.rerank_candidates,
        ),
        reranker=reranker, lanes=search_lanes, model=embedder.identity.name, type_weights=type_weights(settings),
    )
    # The graph looks neighbours up and explains hits in every model's collection, as the retriever searches.
    graph = EngineGraph(settings, links, retriever.lanes, sparse)
    return IndexSet(version, names, embedder, generations, chunks, registry_store, registry, sources, sparse,
                    indexer, retriever, lanes, configured, layout, links_store, graph)


def drop_index(settings: FrekiSettings, version: int) -> None:
    """Delete index ``version``'s collections (closed first by the caller). Missing ones are skipped."""
    store = make_store(store_config(settings))
    try:
        names = collection_names(settings, version)
        lanes = model_collections_prefix(names.chunks)
        if isinstance(store, EdgeStore):
            for name in (*names.all(), *(p.name for p in store.data_dir.glob(f"{lanes}*"))):
                shutil.rmtree(store.data_dir / name, ignore_errors=True)
        elif isinstance(store, RemoteStore):
            present = {c.name for c in store._client.get_collections().collections}
            for name in (*names.all(), *(n for n in present if n.startswith(lanes))):
                if name in present:
                    store._client.delete_collection(name)
    finally:
        store.close()
    log.info("dropped the collections of index %s", collection_names(settings, version).chunks)
