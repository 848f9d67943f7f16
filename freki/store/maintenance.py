"""Background maintenance of the embedded engine: purge after deletions, every so often.

qdrant-edge runs its optimisers only when asked (``optimize``), so without this a collection under churn
keeps every deleted and replaced point in its files and its brute-force appendable segment grows without
bound: searches slow down, memory and disk grow, and deleted plaintext stays on disk. ``Maintenance`` calls
``purge`` at most every ``interval_s`` seconds, and only if something was deleted or replaced since the
last run (``touch``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from freki.store.errors import DiskFull

log = logging.getLogger("freki.maintenance")


class Maintenance:
    """A daemon thread running ``task`` after ``touch``, at most every ``interval_s`` (0 = never)."""

    def __init__(self, task: Callable[[], object], interval_s: float) -> None:
        self._task = task
        self._interval = interval_s
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self.runs = 0
        self._thread: threading.Thread | None = None
        if interval_s > 0:
            self._thread = threading.Thread(target=self._loop, name="freki-maintenance", daemon=True)
            self._thread.start()

    def touch(self) -> None:
        """Something was deleted or replaced: run at the next interval."""
        self._dirty.set()

    def stop(self) -> None:
        """Stop the thread (waits for a run in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            if not self._dirty.is_set():
                continue
            self._dirty.clear()
            started = time.perf_counter()
            try:
                self._task()
                self.runs += 1
                log.info("maintenance purge done in %.2f s", time.perf_counter() - started)
            except DiskFull as exc:  # the watermarks logged the level; one line, and again later
                log.warning("maintenance purge put off: %s", exc)
                self._dirty.set()
            except Exception:  # a failing store is reported by the calls that need it; keep trying later
                log.exception("maintenance purge failed; retried at the next interval")
                self._dirty.set()
