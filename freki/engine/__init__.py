"""The Freki engine: wires parse → chunk → embed → store → retrieve and exposes operations.

The gRPC servicer, the folder watcher and the benchmarks all drive this one object, so
they share the same model, store handles and caches.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from freki.embed.model import EmbeddingModel
from freki.embed.remote_client import caller_deadline
from freki.engine.active_index import active_index_file, load_active
from freki.engine.blue_green import BlueGreen
from freki.engine.config import build_embedder, disk_watermarks, master_key, sandbox_config, store_config
from freki.engine.erasures import Marks, erasure_log, log_document_erasure, log_owner_erasure
from freki.engine.healing import Healer, Scrubber, ScrubReport, scrub
from freki.engine.health import DiskPoller, health
from freki.engine.index_set import IndexSet, build_index, built_with, drop_index, embedding_config
from freki.engine.purging import Purger
from freki.engine.reindex import ReindexReport, full_reindex
from freki.engine.status import EngineStatus, engine_status
from freki.ingest.deadline import NO_DEADLINE, Deadline
from freki.ingest.indexing import IndexInput, IndexResult, document_chunks
from freki.ingest.limits import ChunkingConfig
from freki.ingest.registry import DocumentRecord, generation_age_s
from freki.ingest.repair import RepairReport, repair
from freki.ingest.sandbox import ParserSandbox
from freki.search.rerank import CrossEncoderReranker
from freki.search.result_cache import ResultCache, hit_bytes
from freki.search.retrieval import Hits, Query
from freki.settings import FrekiSettings
from freki.store import FieldMatch, StoredPoint, VectorStore
from freki.store.errors import DiskFull
from freki.store.integrity import Quarantine
from freki.store.keys import KeyStore
from freki.store.maintenance import Maintenance
from freki.store.rwlock import ReadWriteLock
from wolf_service.errors import FailedPrecondition, NotFound
from wolf_service.faults import fault_point

log = logging.getLogger("freki.engine")


class FrekiEngine:
    """Everything Freki does, independent of transport.

    It serves one *index* (``index_set.IndexSet``: the collections one embedding model built), named by the
    active-index record. When ``embedding_model`` names another model than that index was built with, Freki
    serves with the index's own model until a blue/green migration (``blue_green``, started by FullReindex
    with ``migrate_model``) has built the new index and switched.
    """

    def __init__(self, settings: FrekiSettings, *, embedder: EmbeddingModel | None = None) -> None:
        self.settings = settings
        self._given_embedder = embedder
        self.quarantine = Quarantine(Path(settings.data_dir) / "integrity" / "quarantine.json")
        self._models: dict[str, EmbeddingModel] = {}  # every model loaded, by name (``_load``)
        self._models_lock = threading.Lock()
        self.erasures = erasure_log(settings)  # what erasures destroy, for a restore to re-apply (freki.backup)
        self.keys = KeyStore(settings.gdpr.keys_path or Path(settings.data_dir) / "keys.sqlite",
                             master_key=master_key(settings))
        self.active_index_path = active_index_file(settings)
        pointer = load_active(self.active_index_path)
        # store.shared: other replicas write this collection (docs/scaling.md)
        grace = settings.store.orphan_grace_s if settings.store.shared else None
        self._stopping = threading.Event()
        # Index and delete calls share it; an erasure or a migration's switch takes it alone.
        self.writes = ReadWriteLock()
        self.serving = ReadWriteLock()  # searches share it; closing a replaced index waits for them
        self.purger = Purger(lambda: self.active, Path(settings.data_dir) / ".purge-pending",
                             settings.gdpr.purge_on_erase)
        cfg = settings.chunking
        self.chunking = ChunkingConfig(
            max_tokens=cfg.max_tokens, min_tokens=cfg.min_tokens,
            overlap_tokens=cfg.overlap_tokens, similarity_threshold=cfg.similarity_threshold,
            boundary_signal=cfg.boundary_signal,
        )
        rs = settings.retrieval
        self.sandbox = ParserSandbox(sandbox_config(settings))
        self.results = ResultCache(0 if settings.store.shared else rs.result_cache_bytes)
        self._reranker = CrossEncoderReranker(rs.reranker_model, device=settings.embedding_device) \
            if rs.reranker_model else None
        for stale in (pointer.version - 1, *(() if pointer.migration else (pointer.version + 1,))):
            if stale >= 0:
                drop_index(settings, stale) if built_with(settings, stale) is not None else None
        model = built_with(settings, pointer.version) or embedding_config(settings)
        if model != embedding_config(settings) and pointer.migration is None:
            log.warning("embedding_model is %r but the index was built with %r: serving with %r until a "
                        "FullReindex with migrate_model moves the index to the new model",
                        embedding_config(settings), model, model)
        if (disk := disk_watermarks(settings).read()).free_bytes < 0:  # loading would fill it (tmpfs)
            raise DiskFull(f"cannot load the index: {disk.describe()}; free space first", path=disk.path)
        self.active = self.open_index(pointer.version, model)
        self.disk = DiskPoller(disk_watermarks(settings), settings.disk.check_interval_s)
        try:
            self.repair_report: RepairReport = self._repair(grace, pointer.migration is None)
        except BaseException:
            self.active.close()
            self.keys.close()
            self.disk.stop()
            raise
        self.maintenance = self.purger.maintenance = Maintenance(self.purge, settings.store.maintenance_interval_s)
        if self.purger.marker.exists():  # an erasure was interrupted before its purge finished
            self.purger.purge_or_put_off()
        self.blue_green = BlueGreen(self, pointer)
        self.healer = Healer(self, self.quarantine, settings.integrity.heal)
        self.scrubber = Scrubber(self.scrub, settings.integrity.scrub_interval_s)

    def _repair(self, grace: float | None, sweep_keys: bool) -> RepairReport:
        """The start-up consistency pass; on a full disk it is put off (reads serve, the next start runs it)."""
        try:
            report = repair(
                self.active.chunk_stores, self.registry, self.keys, grace,
                self.settings.gdpr.drop_records_without_keys, models={lane.identity.name for lane in self.embedders},
                sources=self.active.sources, sweep_keys=sweep_keys)
            if orphans := self.graph.links.remove_orphans(lambda g: grace is None or generation_age_s(g) > grace):
                report.counts["orphan_link_points"] += orphans
        except DiskFull as exc:
            log.error("start-up consistency pass put off until a start with free disk space: %s", exc)
            return RepairReport()
        return report

    def open_index(self, version: int, model: str) -> IndexSet:
        """Open index ``version`` with ``model`` as its standard model (the given embedder when it is that
        model); models are loaded once per process, so two indexes (a migration) share the type-specific ones."""
        return build_index(self.settings, version, self._load(model), self.keys, chunking=lambda: self.chunking,
                           sandbox=self.sandbox, on_change=self.results.invalidate, reranker=self._reranker,
                           load_model=lambda m: self._load(m, "the model in FREKI_EMBEDDING_MODELS"),
                           quarantine=self.quarantine)

    def _load(self, model: str, setting: str = "FREKI_EMBEDDING_MODEL") -> EmbeddingModel:
        with self._models_lock:
            if model not in self._models:
                given = self._given_embedder
                self._models[model] = given if given is not None and given.identity.name == model \
                    else build_embedder(self.settings, model, setting=setting)
            return self._models[model]

    def swap_active(self, index: IndexSet) -> IndexSet:
        """Serve from ``index`` from now on (a migration's switch); returns the index replaced."""
        old, self.active = self.active, index
        with self._models_lock:  # the replaced index keeps its own references while it drains
            self._models = {e.identity.name: e for e in index.embedders}
        return old

    # The serving index's parts (the layers above and the tests use these names).
    embedder = property(lambda self: self.active.embedder)
    chunks = property(lambda self: self.active.chunks)
    registry = property(lambda self: self.active.registry)
    indexer = property(lambda self: self.active.indexer)
    retriever = property(lambda self: self.active.retriever)
    sparse = property(lambda self: self.active.sparse)
    generations = property(lambda self: self.active.generations)
    graph = property(lambda self: self.active.graph)
    lanes = property(lambda self: self.active.lanes)
    layout = property(lambda self: self.active.layout)
    chunk_stores = property(lambda self: self.active.chunk_stores)
    embedders = property(lambda self: self.active.embedders)
    stopping = property(lambda self: self._stopping.is_set())

    # -- documents -------------------------------------------------------------------------
    def index(self, doc: IndexInput, deadline: Deadline = NO_DEADLINE, *,
              expect_generation: str | None = None) -> IndexResult:
        """Index or re-index one document; stops (writing nothing) when ``deadline`` passes or Freki stops."""
        deadline = deadline.with_stop(self._stopping, "the server is shutting down")
        self.disk.disk.check_write(f"index document {doc.document_id[:200]!r}")  # before any parsing or embedding
        with self.writes.read(), caller_deadline(deadline.remaining()):  # bounds a server model's requests
            try:
                result = self.indexer.index(doc, deadline, expect_generation=expect_generation)
            finally:  # after the write (a migration re-reads it before its switch), even a failed one
                self.blue_green.touch(doc.tenant_id, doc.document_id)
        if result.outcome == "updated":
            self.maintenance.touch()
        return result

    def retrieve(self, query: Query) -> Hits:
        """Search within the query's tenant (answered from the result cache when it can be)."""
        def search() -> Hits:
            with self.serving.read():
                index = self.active
                return index.graph.after_retrieval(query, index.retriever.retrieve(query))

        # Keyed by index version: after a migration's switch, no result of the old index is served.
        return self.results.lookup(query.tenant_id, f"v{self.active.version} {query!r}", search,
                                   lambda hit: hit_bytes(hit.payload))

    def get_document(self, tenant: str, document_id: str) -> DocumentRecord:
        """A document's record, or NotFound."""
        record = self.registry.get(tenant, document_id)
        if record is None:
            raise NotFound(f"document {document_id!r} is not indexed for tenant {tenant!r}")
        return record

    def delete_document(self, tenant: str, document_id: str, *, erase: bool = False, reason: str = "document",
                        marks: Marks = None, purge: bool = True) -> int:
        """Delete every chunk of a document (whether or not the registry knows it), its record, keys and
        cached vectors; returns chunks deleted. ``erase``: in the erasure log first (``reason``, watch ``marks``),
        files purged before returning (``gdpr.purge_on_erase``; ``purge=False``: the caller runs one ``purge``
        for several, the pending marker covers a crash meanwhile). NotFound when there was nothing at all."""
        if erase:
            self.purger.mark()
        with self.writes.read(), self.indexer.document_lock(tenant, document_id):
            known = (record := self.registry.get(tenant, document_id)) is not None
            if erase:
                log_document_erasure(self.erasures, self.keys, tenant, document_id, record, reason, marks)
            try:
                deleted = self.indexer.committer.delete(tenant, document_id)
            finally:
                self.blue_green.touch(tenant, document_id)
            self.indexer.sentence_cache.forget(tenant, document_id)
        if not known and not deleted:
            self.purger.marker.unlink(missing_ok=True)
            raise NotFound(f"document {document_id[:200]!r} is not indexed for tenant {tenant!r}")
        self.maintenance.touch()
        if erase and purge:
            self.purger.after_erase()
        return deleted

    def chunks_of(self, tenant: str, document_id: str, *, with_vectors: bool = False) -> list[StoredPoint]:
        """A document's chunks in order (from its embedding model's collection)."""
        record = self.registry.get(tenant, document_id)
        stores = [self.store_of(record.embedding_model)] if record else self.chunk_stores
        return [p for store in stores for p in document_chunks(store, tenant, document_id, with_vectors=with_vectors)]

    def store_of(self, model: str) -> VectorStore:
        """The collection of ``model``'s chunks in the serving index (the standard one for a model not loaded)."""
        return self.active.store_of(model)

    def full_reindex(self, tenant: str, document_id: str = "") -> ReindexReport:
        """Re-chunk each document (one, or all of the tenant) from its kept source with the current settings;
        without a kept source, re-embed its stored chunk texts (see ``freki.engine.reindex``)."""
        if self.blue_green.running:
            raise FailedPrecondition("a model migration is running; FullReindex waits until it has switched")
        if document_id:
            records = [self.get_document(tenant, document_id)]
        else:
            records = list(self.registry.iterate(tenant))
        return full_reindex(self.active, records, lambda doc, gen: self.index(doc, expect_generation=gen),
                            self.results.invalidate, self._hold_document)

    @contextmanager
    def _hold_document(self, tenant: str, document_id: str) -> Iterator[None]:
        """No index, delete or erasure of the document meanwhile (an erasure waits for the shared lock)."""
        with self.writes.read(), self.indexer.document_lock(tenant, document_id):
            yield

    # -- GDPR ------------------------------------------------------------------------------
    def delete_owner(self, tenant: str, owner_id: str, records: list[DocumentRecord], marks: Marks = None) -> tuple[
            int, int]:
        """Erase every document of a data owner; ``records`` are the owner's registry records, listed by
        the caller (which needs them first, see ``freki.gdpr``). Returns (documents, chunks) deleted.

        Waits for index calls in progress; the owner's keys are destroyed (their text is shredded) and,
        with ``gdpr.purge_on_erase``, the engine's files are purged before this returns."""
        self.purger.mark()
        with self.writes.write():
            log_owner_erasure(self.erasures, self.keys, tenant, owner_id, records, marks)
            for record in records:
                self.generations.hide(record.generation)
            try:
                self.registry.delete_owner(tenant, owner_id)
                fault_point("erase.records_deleted")
                owner = [FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))]
                chunks = sum(store.delete_where(owner) for store in self.chunk_stores)
                self.graph.links.delete_owner(tenant, owner_id)
                if self.active.sources is not None:
                    self.active.sources.delete_owner(tenant, owner_id)
                self.blue_green.erase_owner(tenant, owner_id)
                self.keys.destroy_owner(tenant, owner_id)
            finally:
                for record in records:
                    self.generations.show(record.generation)
                self.results.invalidate(tenant)
            for record in records:
                self.indexer.sentence_cache.forget(tenant, record.document_id)
        self.purger.after_erase()
        return len(records), chunks

    @contextmanager
    def quiesced(self) -> Iterator[None]:
        """No index, delete, erasure or purge meanwhile (searches go on): the state a backup copies."""
        with self.writes.write(), self.purger.paused():
            yield

    def purge(self) -> bool:
        """Remove what deletes left in the engine's files (``freki.engine.purging``); False if it cannot."""
        return self.purger.purge()

    def export_owner(self, tenant: str, owner_id: str, *, with_vectors: bool = False) -> Iterator[
        tuple[DocumentRecord, list[StoredPoint]]
    ]:
        """Each document of a data owner with its chunks, one document at a time (bounded memory)."""
        for record in self.registry.iterate(tenant, owner_id=owner_id):
            yield record, self.chunks_of(tenant, record.document_id, with_vectors=with_vectors)

    # -- status ----------------------------------------------------------------------------
    def status(self, tenant: str | None) -> EngineStatus:
        """Counts for one tenant (or all) and the configuration in force."""
        disk = self.disk.disk.read()
        return engine_status(self.active, self.settings, self.blue_green.status(), tenant, disk=disk,
                             health=health(disk, len(self.quarantine.entries())),
                             quarantined=tuple(self.quarantine.entries(tenant)))

    def scrub(self) -> ScrubReport:
        """Check every stored chunk against its checksum now (``integrity.scrub_interval_s`` runs it too)."""
        return scrub(self)

    def stop_work(self) -> None:
        """Make index calls in progress stop at their next check (kills parser workers); for shutdown."""
        self._stopping.set()
        self.sandbox.close()

    def close(self) -> None:
        """Stop work in progress, then flush and release the stores and the key store."""
        self.stop_work()
        self.blue_green.stop()
        self.maintenance.stop()
        self.scrubber.stop()
        self.healer.stop()
        self.disk.stop()
        self.active.close()
        self.keys.close()


__all__ = ["EngineStatus", "FrekiEngine", "build_embedder", "store_config"]
