"""Blue/green model migration: build a new index with the configured model while the old one serves.

Started by FullReindex with ``migrate_model`` when ``embedding_model`` names another model than the serving
index was built with (Freki then starts and serves with the old model, see ``FrekiEngine``). The job:

1. records the migration in the active-index record (``active_index``), opens index ``version + 1`` with
   the new model (``index_set.build_index``) next to the serving one;
2. migrates every document: re-indexes it from its kept source (or re-embeds its stored chunk texts when
   none was kept), reading a consistent version under the old index's document lock. A document already
   in the new index with the same content is skipped (the content hash names model and chunking), so the
   new index *is* the persisted progress: after a kill -9 the job resumes where it was;
3. writes keep going to the old index meanwhile; each written, deleted or erased document is marked and
   migrated again (an erasure also deletes from the new index at once);
4. switches: with writes paused (the engine's write gate), it migrates the last marked documents, replaces
   the active-index record (one atomic write: the switch) and serves from the new index; after
   ``reindex.switch_grace_s`` the old index is closed and its collections dropped.

A kill -9 at any point before the switch leaves the old index serving after the restart, and the job resumes
(the start-up resumes an interrupted migration; it never starts a new one).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from freki.engine.active_index import (
    ActiveIndex,
    MigrationRecord,
    load_active,
    save_active,
    shared_migration_refusal,
)
from freki.engine.index_set import IndexSet, drop_index, embedding_config
from freki.engine.reindex import input_from_source
from freki.ingest.caches import embed_in_slices
from freki.ingest.indexing import document_chunks
from freki.ingest.parsing.errors import DocumentError
from freki.ingest.registry import DocumentRecord, DocumentRegistry, chunk_point_id, new_generation
from freki.ingest.repair import repair
from freki.settings import FrekiSettings
from freki.store import ChunkPoint, FieldMatch, scroll_pages
from freki.store.keys import KeyStore
from freki.store.rwlock import ReadWriteLock
from wolf_service.errors import FailedPrecondition, ServiceError
from wolf_service.faults import fault_point

log = logging.getLogger("freki.migration")
_FINAL_BATCH = 32  # marked documents left when writes are paused for the switch


@dataclass(frozen=True)
class MigrationStatus:
    """Progress of a model migration (GetIndexStatus)."""

    state: str  # "loading" | "building" | "switching" | "done" | "failed"
    model_from: str
    model_to: str
    started_at: str
    documents_done: int
    documents_total: int
    error: str = ""


def documents(registry: DocumentRegistry) -> Iterator[tuple[str, str]]:
    """(tenant, document id) of every record, page by page. A record written or deleted while the pages are read
    may come back without its payload: it is skipped here (such a document is marked, ``touch``, and migrated)."""
    for points in scroll_pages(registry.store, [], 256):
        for point in points:
            tenant, document_id = point.payload.get("tenant_id"), point.payload.get("document_id")
            if isinstance(tenant, str) and isinstance(document_id, str):
                yield tenant, document_id


class Engine(Protocol):
    """What the migration uses of ``FrekiEngine``."""

    settings: FrekiSettings
    keys: KeyStore
    active: IndexSet
    active_index_path: Path
    writes: ReadWriteLock  # index/delete calls share it; an erasure and the switch take it alone
    serving: ReadWriteLock  # searches share it

    @property
    def stopping(self) -> bool: ...
    def open_index(self, version: int, model: str) -> IndexSet: ...
    def swap_active(self, index: IndexSet) -> IndexSet: ...


class BlueGreen:
    """The engine's model migration (at most one at a time)."""

    def __init__(self, engine: Engine, active: ActiveIndex) -> None:
        self._engine = engine
        self._path = engine.active_index_path
        self._record = active.migration
        self._dirty: set[tuple[str, str]] = set()
        self._guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self._target: IndexSet | None = None
        self._state, self._error, self._done, self._total, self._skipped = "", "", 0, 0, 0
        self.switch_ms = 0.0  # how long writes were paused for the switch (the last migration's)
        if self._record is not None and shared_migration_refusal(engine.settings):
            # Another replica's migration, recorded in the shared active-index file: not ours to resume or drop.
            log.warning("a model migration to %r (index %d) is recorded in %s; this replica (store.shared without "
                        "reindex.shared_migration) neither resumes nor abandons it and serves index %d",
                        self._record.model_to, self._record.target, self._path, active.version)
            self._record = None
        if self._record is not None:
            if self._record.model_to != embedding_config(engine.settings):
                log.warning("the interrupted migration to %r is abandoned: embedding_model is now %r",
                            self._record.model_to, embedding_config(engine.settings))
                drop_index(engine.settings, self._record.target)
                save_active(self._path, ActiveIndex(active.version))
                self._record = None
            else:
                log.info("resuming the migration to %r (index %d)", self._record.model_to, self._record.target)
                self._launch()

    @property
    def running(self) -> bool:
        return self._record is not None and self._state not in ("done", "failed")

    def status(self) -> MigrationStatus | None:
        record = self._record
        if record is None:
            return None
        return MigrationStatus(self._state, record.model_from, record.model_to, record.started_at, self._done,
                               self._total, self._error)

    def touch(self, tenant: str, document_id: str) -> None:
        """A document of the serving index was written or deleted: migrate it again before the switch."""
        if self._record is not None:
            with self._guard:
                self._dirty.add((tenant, document_id))

    def start(self) -> MigrationStatus:
        """Start a migration to the configured model (FullReindex ``migrate_model``); the running one if any."""
        if self.running:
            status = self.status()
            assert status is not None
            return status
        engine = self._engine
        if refusal := shared_migration_refusal(engine.settings):
            raise FailedPrecondition(refusal)
        model_to, model_from = embedding_config(engine.settings), engine.active.model
        if model_to == model_from:
            raise FailedPrecondition(
                f"the index is already built with {model_from!r}: set embedding_model to the new model and restart "
                "Freki first (it keeps serving with the old model until the migration switches)")
        version = engine.active.version
        record = MigrationRecord(version + 1, model_from, model_to, datetime.now(UTC).isoformat())
        drop_index(engine.settings, record.target)  # what an abandoned attempt left
        save_active(self._path, ActiveIndex(version, record))
        self._record, self._state, self._error = record, "", ""
        self._launch()
        status = self.status()
        assert status is not None
        return status

    def erase_owner(self, tenant: str, owner_id: str) -> None:
        """An owner's data is erased from the serving index: delete it from the new one too (writes are paused)."""
        target = self._target
        if target is None:
            return
        target.registry.delete_owner(tenant, owner_id)
        for store in target.chunk_stores:
            store.delete_where([FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))])
        target.graph.links.delete_owner(tenant, owner_id)
        if target.sources is not None:
            target.sources.delete_owner(tenant, owner_id)

    def stop(self) -> None:
        """Wait for the job to stop (the engine's stop flag is set); for shutdown."""
        if self._thread is not None:
            self._thread.join()
        if self._target is not None and self._state != "done":
            self._target.close()

    # -- the job ---------------------------------------------------------------------------------------------
    def _launch(self) -> None:
        self._state = "loading"
        self._thread = threading.Thread(target=self._run, name="freki-migration", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        record = self._record
        assert record is not None
        started = time.perf_counter()
        target: IndexSet | None = None
        try:
            engine = self._engine
            target = engine.open_index(record.target, record.model_to)
            repair(target.chunk_stores, target.registry, engine.keys, None,
                   engine.settings.gdpr.drop_records_without_keys,
                   models={e.identity.name for e in target.embedders}, sources=target.sources, sweep_keys=False)
            target.graph.links.remove_orphans(lambda generation: True)
            self._target, self._state = target, "building"
            self._remove_deleted(target)
            self._total = engine.active.registry.count()
            for tenant, document_id in documents(engine.active.registry):
                if engine.stopping:
                    return
                with engine.writes.read():
                    self._migrate(target, tenant, document_id)
                self._done += 1
                fault_point(f"migration.document.{self._done}")
                if self._done % 100 == 0:
                    log.info("migration to %r: %d of %d documents", record.model_to, self._done, self._total)
            while len(self._dirty) > _FINAL_BATCH and not engine.stopping:
                for key in self._take_dirty():
                    with engine.writes.read():
                        self._migrate(target, *key)
            if engine.stopping:
                return
            self._switch(target, record, started)
        except Exception as exc:  # the old index keeps serving; a restart resumes
            self._state, self._error = "failed", str(exc)[:500]
            log.exception("the migration to %r failed; the old index keeps serving", record.model_to)
            self._target = None
            if target is not None:  # closed, so a new FullReindex(migrate_model) can start over
                target.close()

    def _take_dirty(self) -> list[tuple[str, str]]:
        with self._guard:
            taken, self._dirty = sorted(self._dirty), set()
        return taken

    def _remove_deleted(self, target: IndexSet) -> None:
        """Documents in the new index that the serving one no longer has (deleted while no process ran)."""
        active = self._engine.active.registry
        gone = [(tenant, doc) for tenant, doc in documents(target.registry) if active.get(tenant, doc) is None]
        for tenant, document_id in gone:
            with self._engine.writes.read():
                self._migrate(target, tenant, document_id)

    def _migrate(self, target: IndexSet, tenant: str, document_id: str) -> None:
        """Make the new index's version of one document match the serving index's."""
        serving = self._engine.active
        with serving.indexer.document_lock(tenant, document_id):  # one consistent committed version
            old = serving.registry.get(tenant, document_id)
            doc = input_from_source(serving, old, force=False) if old is not None else None
            points = document_chunks(serving.store_of(old.embedding_model), tenant, document_id) \
                if old is not None and doc is None else []
        if old is None:
            target.indexer.committer.delete(tenant, document_id)
            return
        if doc is not None:
            try:
                if target.indexer.index(doc).outcome == "unchanged":
                    self._skipped += 1  # migrated before (by this run or one a restart interrupted)
                return
            except (DocumentError, ServiceError) as exc:  # refused with the new model's limits: keep its text
                log.warning("document %r is copied, not re-chunked, into the new index: %s", document_id[:80], exc)
                with serving.indexer.document_lock(tenant, document_id):
                    points = document_chunks(serving.store_of(old.embedding_model), tenant, document_id)
        self._copy(target, old, points)

    def _copy(self, target: IndexSet, old: DocumentRecord, points: list) -> None:  # type: ignore[type-arg]
        """Re-embed a document's stored chunk texts into the new index (no kept source)."""
        marker = f"copied:{old.content_hash}"
        existing = target.registry.get(old.tenant_id, old.document_id)
        if existing is not None and existing.content_hash == marker or not points:
            self._skipped += 1
            return
        generation = new_generation()
        vectors = embed_in_slices(target.embedder.embed, [str(p.payload.get("content", "")) for p in points])
        sparse = target.indexer.sparse_of_points(points)
        new_points = [
            ChunkPoint(id=chunk_point_id(old.tenant_id, old.document_id, generation, i), dense=v.tolist(), sparse=s,
                       payload={**p.payload, "generation": generation})
            for i, (p, v, s) in enumerate(zip(points, vectors, sparse, strict=True))
        ]
        record = DocumentRecord(**{**old.__dict__, "generation": generation, "content_hash": marker,
                                   "chunk_count": len(new_points), "embedding_model": target.model,
                                   "embedding_dimension": target.embedder.dimension})
        links = self._engine.active.graph.links.links_of(  # its knowledge-graph links go along
            old.tenant_id, old.document_id, old.source, self._engine.settings.graph.max_links_per_document)
        target.indexer.committer.commit(new_points, record, existing, stage="migrate", links=links)

    def _switch(self, target: IndexSet, record: MigrationRecord, started: float) -> None:
        engine = self._engine
        self._state = "switching"
        paused = time.perf_counter()
        with engine.writes.write():
            for key in self._take_dirty():
                self._migrate(target, *key)
            log.info("migration to %r: switching after %d documents (%d already migrated before)",
                     record.model_to, self._total, self._skipped)
            fault_point("migration.before_switch")
            save_active(self._path, ActiveIndex(record.target))  # the switch
            fault_point("migration.switched")
            old = engine.swap_active(target)
        self.switch_ms = (time.perf_counter() - paused) * 1000
        self._state = "done"
        log.info("migration to %r done: %d documents in %.1f s; writes paused %.0f ms for the switch",
                 record.model_to, self._total, time.perf_counter() - started, self.switch_ms)
        time.sleep(engine.settings.reindex.switch_grace_s)
        with engine.serving.write():  # no request still reads the old index
            old.close()
        drop_index(engine.settings, old.version)
        assert load_active(self._path).version == record.target
