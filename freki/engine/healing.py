"""Corrupt chunks found and healed: the scrub reads every stored chunk against its checksum, the healer
re-indexes the document of each quarantined chunk from its kept source (``freki.store.integrity``).

A healed document gets a new generation, so its corrupt points are deleted with the old one and leave the
quarantine. A chunk whose payload the engine cannot decode is found in the payload index (its document is
listed) but not healed: the engine can neither delete nor overwrite it, and a failed attempt stops every write
to the collection until a restart. It stays quarantined, never served (docs/operations.md, "Integrity").
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from freki.engine.reindex import ReindexReport
from freki.store.base import FieldMatch
from freki.store.integrity import Quarantine, QuarantinedChunk
from freki.store.sealed import SealedStore


class Engine(Protocol):
    """What the scrub and the healer use of ``FrekiEngine``."""

    quarantine: Quarantine

    @property
    def chunk_stores(self) -> list[SealedStore]: ...

    def full_reindex(self, tenant: str, document_id: str = "") -> ReindexReport: ...

log = logging.getLogger("freki.integrity")
PAGE = 256
UNDELETABLE = ("failed: the engine cannot decode this payload and cannot delete it either; restore the collection "
               "from a backup, or move it away and index the documents again")


@dataclass
class ScrubReport:
    """What one scrub read: points per collection, and the corrupt ones found."""

    checked: dict[str, int] = field(default_factory=dict)
    corrupt: list[QuarantinedChunk] = field(default_factory=list)
    seconds: float = 0.0


def _id_pages(store: Any) -> Iterator[list[str]]:
    """Every point id of a chunk collection, a page at a time, without reading payloads (edge engine), or
    from a plain scroll (a Qdrant server, which decodes payloads itself)."""
    offset: str | None = None
    inner = store.inner
    while True:
        if hasattr(inner, "ids_page"):
            ids, offset = inner.ids_page(offset, PAGE)
        else:
            points, offset = inner.scroll([], PAGE, offset)
            ids = [p.id for p in points]
        yield ids
        if offset is None:
            return


def scrub(engine: Engine) -> ScrubReport:
    """Read every chunk of the serving index with its vector and check it; corrupt ones are quarantined."""
    started = time.perf_counter()
    report = ScrubReport()
    before = {e.chunk_id for e in engine.quarantine.entries()}
    for store in engine.chunk_stores:
        name = str(store.collection)
        for ids in _id_pages(store):
            with store.generations.reading() as hidden:
                store._read_checked(ids, hidden, with_sparse=True)
            report.checked[name] = report.checked.get(name, 0) + len(ids)
    report.corrupt = [e for e in engine.quarantine.entries() if e.chunk_id not in before]
    report.seconds = time.perf_counter() - started
    log.info("scrub: %d chunks checked in %.1f s, %d corrupt found", sum(report.checked.values()), report.seconds,
             len(report.corrupt))
    return report


class Healer:
    """A daemon thread re-indexing the documents of quarantined chunks (``heal`` False: it only lists them)."""

    def __init__(self, engine: Engine, quarantine: Quarantine, heal: bool) -> None:
        self._engine = engine
        self._quarantine = quarantine
        self._heal = heal
        self._todo: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="freki-heal", daemon=True)
        quarantine.listeners.append(self._enqueue)
        for entry in quarantine.entries():  # found before a restart and not yet healed
            if entry.heal == "pending":
                self._enqueue(entry)
        self._thread.start()

    def _enqueue(self, entry: QuarantinedChunk) -> None:
        if self._heal:
            self._todo.put((entry.tenant_id, entry.document_id or entry.chunk_id))
        else:
            self._quarantine.mark([entry.chunk_id], "failed: not healed (integrity.heal is off, or `freki verify` "
                                  "ran without --heal); re-index the document")

    def _loop(self) -> None:
        while (item := self._todo.get()) is not None:
            tenant, document_id = item
            entries = self._quarantine.entries()
            if not tenant:  # an unreadable payload: find its document through the payload index
                found = next((e for e in entries if e.chunk_id == document_id), None)
                owner = self._owner(found) if found is not None else None
                if found is None:
                    continue
                if owner is None:
                    self._quarantine.mark([found.chunk_id], "failed: the payload is unreadable and no document "
                                          "owns the chunk; delete it by re-indexing its document")
                    continue
                # The engine fails to delete or overwrite a point it cannot decode, and then refuses every write
                # to the collection until restarted: so no re-index here (docs/operations.md, "Integrity").
                self._quarantine.mark([found.chunk_id], UNDELETABLE, owner=owner)
                continue
            chunks = [e.chunk_id for e in entries if (e.tenant_id, e.document_id) == (tenant, document_id)]
            if chunks:
                self._run(tenant, document_id, chunks)

    def _owner(self, entry: QuarantinedChunk) -> tuple[str, str] | None:
        """(tenant, document) whose chunks include ``entry``'s point, from the indexed payload fields (readable
        when the payload itself is not): one id listing per document of the collection, so only on corruption."""
        store = next((s for s in self._engine.chunk_stores if s.collection == entry.collection), None)
        if store is None or not hasattr(store.inner, "ids_page"):
            return None
        inner = store.inner
        for tenant in store.value_counts("tenant_id"):
            for doc in store.value_counts("document_id", [FieldMatch("tenant_id", (tenant,))]):
                match = [FieldMatch("tenant_id", (tenant,)), FieldMatch("document_id", (doc,))]
                offset: str | None = None
                while True:
                    ids, offset = inner.ids_page(offset, PAGE, match)
                    if entry.chunk_id in ids:
                        return tenant, doc
                    if offset is None:
                        break
        return None

    def _run(self, tenant: str, document_id: str, chunks: list[str]) -> None:
        self._quarantine.mark(chunks, "healing")
        try:
            report = self._engine.full_reindex(tenant, document_id)
        except Exception as exc:  # stays listed with the reason; the next scrub finds it again
            log.error("healing document %r of tenant %r failed: %s", document_id, tenant, exc)
            self._quarantine.mark(chunks, f"failed: {str(exc)[:300]}")
            return
        self._quarantine.resolve(chunks)
        log.info("healed document %r of tenant %r: re-indexed (%s), %d corrupt chunk(s) replaced", document_id,
                 tenant, report.note or "from its kept source", len(chunks))

    def stop(self) -> None:
        self._todo.put(None)
        self._thread.join(30)


class Scrubber:
    """A daemon thread running ``scrub`` every ``interval_s`` (0 = never)."""

    def __init__(self, run: Callable[[], object], interval_s: float) -> None:
        self._run = run
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if interval_s > 0:
            self._thread = threading.Thread(target=self._loop, name="freki-scrub", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._run()
            except Exception:  # a store error is reported by the calls that need it; try again next time
                log.exception("scrub failed; retried at the next interval")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
