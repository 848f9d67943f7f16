"""The Freki engine: wires parse → chunk → embed → store → retrieve, starts and stops its parts.

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
from freki.engine.active_index import active_index_file, load_active
from freki.engine.blue_green import BlueGreen
from freki.engine.config import build_embedder, disk_watermarks, master_key, sandbox_config
from freki.engine.erasures import erasure_log
from freki.engine.healing import Healer, Scrubber, ScrubReport, scrub
from freki.engine.health import DiskPoller
from freki.engine.index_set import IndexSet, build_index, built_with, drop_index, embedding_config
from freki.engine.owner_data import OwnerDataOperations
from freki.engine.purging import Purger
from freki.engine.status import EngineStatus, engine_status
from freki.ingest.limits import ChunkingConfig
from freki.ingest.registry import generation_age_s
from freki.ingest.repair import RepairReport, repair
from freki.ingest.sandbox import ParserSandbox
from freki.search.rerank import CrossEncoderReranker
from freki.search.result_cache import ResultCache
from freki.settings import FrekiSettings
from freki.store.errors import DiskFull
from freki.store.integrity import Quarantine
from freki.store.keys import KeyStore
from freki.store.maintenance import Maintenance
from freki.store.rwlock import ReadWriteLock

log = logging.getLogger("freki.engine")


class FrekiEngine(OwnerDataOperations):
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

    @contextmanager
    def quiesced(self) -> Iterator[None]:
        """No index, delete, erasure or purge meanwhile (searches go on): the state a backup copies."""
        with self.writes.write(), self.purger.paused():
            yield

    def purge(self) -> bool:
        """Remove what deletes left in the engine's files (``freki.engine.purging``); False if it cannot."""
        return self.purger.purge()

    # -- status ----------------------------------------------------------------------------
    def status(self, tenant: str | None) -> EngineStatus:
        """Counts for one tenant (or all) and the configuration in force."""
        disk = self.disk.disk.read()
        return engine_status(self.active, self.settings, self.blue_green.status(), tenant, disk=disk,
                             quarantined=tuple(self.quarantine.entries(tenant)),
                             quarantined_count=len(self.quarantine.entries()))

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
