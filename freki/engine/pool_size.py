"""How many parser worker processes this machine can afford: ``limits.parse_workers`` = "auto" (or 0).

A worker may take up to ``limits.parse_memory_mb`` of memory and keeps one core busy while it parses (or,
once OCR is in, recognises a page), so the pool is the smallest of: the cores this process may use (CPU
affinity and a cgroup CPU quota, as in a container), the memory available now (``MemAvailable``, or the
cgroup's memory limit less what it uses, whichever is less) divided by ``parse_memory_mb``, and ``AUTO_CAP``.
At least one worker, whatever the memory says: the memory cap per worker still holds.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

AUTO_CAP = 8  # more parsers than this only queue behind the one encoder
_CGROUP = Path("/sys/fs/cgroup")
MIB = 1024 * 1024


@dataclass(frozen=True)
class PoolSize:
    """The pool size chosen, and what it was chosen from (for the start-up log)."""

    workers: int
    cores: int
    available_mb: int | None
    reason: str


def parse_pool_size(setting: int | str, memory_mb: int, *, cgroup: Path = _CGROUP) -> PoolSize:
    """``setting`` as a number of workers: an explicit count is kept; "auto" or 0 is sized to the machine."""
    if setting not in ("auto", 0, "0"):
        workers = int(setting)
        return PoolSize(workers, usable_cores(cgroup), None, "limits.parse_workers")
    cores = usable_cores(cgroup)
    available = available_memory_mb(cgroup)
    by_memory = max(1, available // memory_mb) if available is not None else AUTO_CAP
    workers = max(1, min(cores, by_memory, AUTO_CAP))
    return PoolSize(workers, cores, available, f"auto: min({cores} cores, {by_memory} by memory, cap {AUTO_CAP})")


def usable_cores(cgroup: Path = _CGROUP) -> int:
    """Cores this process may run on: its CPU affinity, lowered by a cgroup v2 CPU quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def available_memory_mb(cgroup: Path = _CGROUP) -> int | None:
    """MiB that can still be taken: the kernel's MemAvailable, lowered by a cgroup v2 memory limit; None if unknown."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024 // MIB)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = (cgroup / "memory.max").read_text().strip()
        if limit != "max":
            used = int((cgroup / "memory.current").read_text().strip())
            found.append(max(0, int(limit) - used) // MIB)
    except (OSError, ValueError):
        pass
    return min(found) if found else None
