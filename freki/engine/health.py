"""Is this Freki healthy: the disk watermarks read in the background, and what GetIndexStatus says.

The store probe (:class:`StoreProbe`) turns grpc.health.v1 NOT_SERVING while the store is gone (data dir
removed or unreadable, Qdrant server unreachable) and SERVING when it is back.

"degraded" means Freki serves reads but something needs an operator: writes are refused for lack of disk
space (``freki.store.disk``), or stored chunks failed their integrity check and are quarantined
(``freki.store.integrity``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from freki.store.disk import DiskState, DiskWatermarks

log = logging.getLogger("freki.disk")


class DiskPoller:
    """A daemon thread reading the disk watermarks every ``interval_s``, so the level, its log line and the
    health report change when space runs out (or comes back) even while nothing is written."""

    def __init__(self, disk: DiskWatermarks, interval_s: float) -> None:
        self.disk = disk
        self._interval = interval_s
        self._stop = threading.Event()
        self.last: DiskState = disk.read()
        self._thread = threading.Thread(target=self._loop, name="freki-disk", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.last = self.disk.read()
            except OSError as exc:  # the data dir vanished or its file system is gone: say so, keep polling
                log.error("cannot read the free space of %s: %s", self.disk.path, exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def disk_reason(disk: DiskState, *, detailed: bool = True) -> str:
    """What the disk's level adds to the health reasons ("" at "ok"); its path and bytes only if ``detailed``."""
    if disk.level not in ("refuse", "warn"):
        return ""
    what = disk.describe() if detailed else f"the data dir's disk is below the {disk.level} level"
    return f"{'writes refused' if disk.level == 'refuse' else 'disk space low'}: {what}"


def health(disk: DiskState | None, quarantined: int, *, detailed: bool = True,
           store_problem: str | None = None) -> tuple[str, tuple[str, ...]]:
    """("ok" | "degraded" | "unavailable", reasons) from the store's reachability, the disk's state (its path
    and bytes only if ``detailed``) and the number of quarantined chunks."""
    reasons = [store_problem] if store_problem else []
    if disk is not None and (reason := disk_reason(disk, detailed=detailed)):
        reasons.append(reason)
    if quarantined:
        reasons.append(f"{quarantined} chunk(s) failed their integrity check and are quarantined (not served); "
                       "see quarantined_chunks")
    degraded = (disk is not None and disk.level == "refuse") or quarantined > 0
    level = "unavailable" if store_problem else "degraded" if degraded else "ok"
    return level, tuple(reasons)


def store_problem(data_dir: Path, count: Callable[[], int]) -> str | None:
    """Why the store cannot serve (None: it can): the data dir gone or unreadable, or the store's own
    answer to a count failing (an unreachable Qdrant server, an engine that lost its files)."""
    try:
        os.listdir(data_dir)
    except OSError as exc:
        return f"data dir {data_dir} is unreadable: {exc.strerror or exc}"
    try:
        count()
    except Exception as exc:  # any failure of the store means the same to a probe: not serving
        return f"the store does not answer: {str(exc)[:300]}"
    return None


class StoreProbe:
    """A daemon thread asking :func:`store_problem` every ``interval_s`` and telling ``report`` when the
    answer changes (None: serving again), so grpc.health.v1 says NOT_SERVING while the store is gone."""

    def __init__(self, problem: Callable[[], str | None], interval_s: float,
                 report: Callable[[str | None], None]) -> None:
        self._problem = problem
        self._interval = interval_s
        self._report = report
        self._stop = threading.Event()
        self.last: str | None = None
        self._thread = threading.Thread(target=self._loop, name="freki-store-probe", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            found = self._problem()
            if found != self.last:
                if found:
                    log.error("store unavailable, health NOT_SERVING: %s", found)
                else:
                    log.warning("store reachable again, health SERVING")
                self.last = found
                self._report(found)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
