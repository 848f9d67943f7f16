"""Purging the engine's files of what deletes left behind (``VectorStore.purge``), shared by maintenance,
erasures and the start (an interrupted erasure leaves ``.purge-pending``).

On a full disk a purge is put off (``DiskFull``): the marker stays, so maintenance or the next start runs it.
The erased text is unreadable meanwhile: its keys were destroyed (docs/decisions/0006-crypto-shredding.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from freki.engine.index_set import IndexSet
from freki.store.errors import DiskFull
from freki.store.maintenance import Maintenance

log = logging.getLogger("freki.engine")


class Purger:
    """Purges the serving index's collections; concurrent callers share one run."""

    def __init__(self, index: Callable[[], IndexSet], marker: Path, on_erase: bool) -> None:
        self._index = index
        self.marker = marker
        self._on_erase = on_erase
        self._lock, self._guard = threading.Lock(), threading.Lock()
        self._requests = self._done_upto = 0
        self.maintenance: Maintenance | None = None  # touched when a purge is put off

    def purge(self) -> bool:
        """Purge now; False if the engine cannot. A caller whose request came before a run started is served
        by it. The chunk collections and the companions (registry, links, sources) are purged side by side."""
        with self._guard:
            self._requests += 1
            ticket = self._requests
        with self._lock:
            if self._done_upto >= ticket:
                return True
            with self._guard:
                covers = self._requests
            index = self._index()
            companions = [index.registry_store, index.links_store, *([index.sources.store] if index.sources else [])]
            failed: list[BaseException] = []

            def purge_companions() -> None:
                try:
                    for store in companions:
                        store.purge()
                except BaseException as exc:  # raised on the caller's thread below
                    failed.append(exc)

            registry = threading.Thread(target=purge_companions, name="freki-purge-registry")
            registry.start()
            try:
                done = all([store.purge() for store in index.chunk_stores])
            finally:
                registry.join()
            if failed:
                raise failed[0]
            self._done_upto = covers
            self.marker.unlink(missing_ok=True)
            return done

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No purge runs in the block (a backup copies the files meanwhile)."""
        with self._lock:
            yield

    def purge_or_put_off(self) -> None:
        """Purge now, or on a full disk later (see the module docstring)."""
        try:
            self.purge()
        except DiskFull as exc:
            if self.maintenance is not None:
                self.maintenance.touch()
            log.error("purge after an erasure put off: %s", exc)

    def mark(self) -> None:
        """An erasure begins: a crash before its purge finished is purged at the next start."""
        if self._on_erase:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.touch()

    def after_erase(self) -> None:
        if self._on_erase:
            self.purge_or_put_off()
