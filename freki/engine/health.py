"""Is this Freki healthy: the disk watermarks read in the background, and what GetIndexStatus says.

"degraded" means Freki serves reads but something needs an operator: writes are refused for lack of disk
space (``freki.store.disk``), or stored chunks failed their integrity check and are quarantined
(``freki.store.integrity``).
"""

from __future__ import annotations

import logging
import threading

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


def health(disk: DiskState, quarantined: int) -> tuple[str, tuple[str, ...]]:
    """("ok" | "degraded", reasons) from the disk's state and the number of quarantined chunks."""
    reasons = []
    if disk.level == "refuse":
        reasons.append(f"writes refused: {disk.describe()}")
    elif disk.level == "warn":
        reasons.append(f"disk space low: {disk.describe()}")
    if quarantined:
        reasons.append(f"{quarantined} chunk(s) failed their integrity check and are quarantined (not served); "
                       "see quarantined_chunks")
    degraded = disk.level == "refuse" or quarantined > 0
    return ("degraded" if degraded else "ok"), tuple(reasons)
