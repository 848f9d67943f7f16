"""Disk watermarks: free space of the data dir's file system, checked before every write.

The embedded engine memory-maps its files (write-ahead log segments, vector chunks, payload pages) and grows
them as sparse files; a write into a page the file system cannot allocate is a SIGBUS that kills the process,
not an error Python could catch. So Freki never lets the engine write unless the file system has room for
that write plus the refuse level (docs/decisions/0221-disk-and-integrity.md):

* ``warn`` level: writes go on; a WARNING line, the ``freki_disk_state`` gauge and GetIndexStatus say so.
* ``refuse`` level: writes (index, re-index, feedback, the watcher) are refused with RESOURCE_EXHAUSTED
  (``DiskFull``) naming the disk and the setting; reads keep serving; health reports "degraded".
* Deletions and erasures go on down to half the refuse level (they are small and free space once purged, and
  an erasure request must be honoured).

A level is the larger of its byte and percent settings (either may be 0). Every check reads ``statvfs`` afresh,
so space freed by an operator is seen on the next write.

On tmpfs a read of a hole in a memory-mapped file allocates the page, and the engine reads its vector chunks and
payload-index pages whole when it loads a shard: their holes are space the next start takes. There they count
as used already (``populate_debt``), so a start on a full tmpfs never runs out while loading.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freki.store.errors import DiskFull

log = logging.getLogger("freki.disk")

MIB = 1024 * 1024
# What the engine allocates for a batch, as a multiple of the batch's raw bytes: the write-ahead log entry,
# the vector and payload storage, the payload indexes and the id tracker (docs/decisions/0221-disk-and-integrity.md).
WRITE_AMPLIFICATION = 4
# Pages the engine touches on any write however small (log entry header, tracker, flush of index pages).
WRITE_FLOOR_BYTES = 1 * MIB
LEVELS = ("ok", "warn", "refuse")
DEBT_TTL_S = 2.0


@dataclass(frozen=True)
class DiskLevels:
    """Free-space levels; each level is the larger of its bytes and its percent of the file system."""

    warn_free_bytes: int = 2048 * MIB
    warn_free_percent: float = 10.0
    refuse_free_bytes: int = 512 * MIB
    refuse_free_percent: float = 5.0

    def warn_at(self, total: int) -> int:
        return max(self.warn_free_bytes, int(total * self.warn_free_percent / 100))

    def refuse_at(self, total: int) -> int:
        return max(self.refuse_free_bytes, int(total * self.refuse_free_percent / 100))


@dataclass(frozen=True)
class DiskState:
    """One reading of the data dir's file system."""

    path: str
    free_bytes: int
    total_bytes: int
    level: str  # "ok" | "warn" | "refuse"
    refuse_at: int
    warn_at: int
    populate_debt: int = 0  # tmpfs: bytes a load of the engine's files will take (not in free_bytes)

    def describe(self) -> str:
        debt = f" (after {_mib(self.populate_debt)} the engine takes when it loads on tmpfs)" \
            if self.populate_debt else ""
        return (f"the disk of {self.path} has {_mib(self.free_bytes)} free{debt} of {_mib(self.total_bytes)}; "
                f"writes are refused below {_mib(self.refuse_at)} (disk.refuse_free_bytes / "
                f"disk.refuse_free_percent), warned about below {_mib(self.warn_at)} (disk.warn_free_bytes / "
                "disk.warn_free_percent)")


def _mib(n: int) -> str:
    return f"{n / MIB:,.1f} MiB"


def batch_need(points: Sequence[Any]) -> int:
    """Bytes the engine may allocate for a write batch of ``ChunkPoint``: the raw bytes (dense and sparse
    vectors, the payload as JSON) times the write amplification, plus the floor of any write."""
    total = 0
    for p in points:
        sparse = len(p.sparse.indices) * 8 if p.sparse is not None else 0
        total += 4 * len(p.dense) + sparse + len(json.dumps(p.payload, default=str))
    return total * WRITE_AMPLIFICATION + WRITE_FLOOR_BYTES


# Files the engine reads whole when it loads a shard (their holes are allocated on tmpfs then).
_POPULATED = ("vectors/chunk_*.mmap", "payload_index/*/page_*.dat", "payload_index/*/tracker.dat")


def file_system_type(path: Path) -> str:
    """The type of the file system holding ``path`` (longest mount point in /proc/mounts), "" if unknown."""
    best, kind = "", ""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return ""
    target = str(path.resolve())
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        if (target == point or target.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def populate_debt(data_dir: Path) -> int:
    """Bytes of holes in the files the engine reads whole when loading (see the module docstring)."""
    debt = 0
    for segment in data_dir.glob("**/shard/segments/*"):
        for pattern in _POPULATED:
            for f in segment.glob(f"**/{pattern}"):
                try:
                    st = f.stat()
                except OSError:  # replaced by an optimisation meanwhile
                    continue
                debt += max(0, st.st_size - st.st_blocks * 512)
    return debt


class DiskWatermarks:
    """Checks the free space under ``path`` against ``levels`` before writes (see the module docstring)."""

    def __init__(self, path: str | Path, levels: DiskLevels) -> None:
        self.path = Path(path)
        self.levels = levels
        self.refused = 0  # writes refused, for the metric
        # Called with the new state when the level changes (the server's health service listens).
        self.listeners: list[Callable[[DiskState], None]] = []
        self._level = "ok"
        self._lock = threading.Lock()
        self._tmpfs = file_system_type(self.path) == "tmpfs"
        self._debt_value, self._debt_at = 0, -DEBT_TTL_S

    def read(self) -> DiskState:
        """The file system's free space now, and its level; logs and reports a change of level."""
        target = self.path
        while not target.exists() and target != target.parent:  # the data dir may not exist yet
            target = target.parent
        st = os.statvfs(target)
        free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
        debt = self._debt() if self._tmpfs else 0
        free -= debt
        refuse_at, warn_at = self.levels.refuse_at(total), self.levels.warn_at(total)
        level = "refuse" if free < refuse_at else "warn" if free < warn_at else "ok"
        state = DiskState(str(self.path), free, total, level, refuse_at, warn_at, debt)
        self._note(state)
        return state

    def _debt(self) -> int:
        # The scan walks every segment (milliseconds); the debt changes only when the engine adds files.
        now = time.monotonic()
        if now - self._debt_at > DEBT_TTL_S:
            self._debt_value, self._debt_at = populate_debt(self.path), now
        return self._debt_value

    def check_write(self, action: str, need: int = WRITE_FLOOR_BYTES, *, deletion: bool = False) -> DiskState:
        """Raise ``DiskFull`` unless ``need`` bytes fit above the refuse level (half of it for a deletion)."""
        state = self.read()
        floor = state.refuse_at // 2 if deletion else state.refuse_at
        if state.free_bytes - need < floor:
            with self._lock:
                self.refused += 1
            raise DiskFull(f"cannot {action}: {state.describe()}; free space or give the data dir more room, "
                           "reads keep serving meanwhile", path=state.path)
        return state

    def _note(self, state: DiskState) -> None:
        with self._lock:
            old, self._level = self._level, state.level
        if old == state.level:
            return
        if state.level == "ok":
            log.info("disk space back above the warn level: %s", state.describe())
        elif state.level == "warn":
            log.warning("disk space low: %s", state.describe())
        else:
            log.error("disk space below the refuse level, writes are refused until space is freed: %s",
                      state.describe())
        for listener in list(self.listeners):
            listener(state)
