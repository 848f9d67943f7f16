"""Debouncing file events so each file is indexed once, when its writer is done.

Editors save in bursts: write a temporary file, rename it over the original, touch attributes;
large copies arrive as many partial writes. Every event only (re)arms a per-path timer; a file is
handed to the worker once no event touched it for ``delay`` seconds *and* its size and mtime are the
same as at the last event (a writer that keeps writing without events, e.g. over a polled share,
re-arms it). What to do with the path (index, re-index, delete) is decided when it is processed, from
what is on disk then, so the order of the events in a burst does not matter.

A vanished path is held back (up to ``HOLD`` quiet periods) while files that exist are still pending:
inotify can report a move as a deletion plus a creation (a file moved into a folder created a moment
before, whose watch did not exist yet), and handing both over together lets the worker pair them by
content and keep the vectors.

Memory is bounded: at most ``max_pending`` distinct paths wait; past that the debouncer reports an
overflow and the watcher rescans the folder instead of tracking every event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from freki.watch.files import stat_key

StatKey = tuple[int, int] | None
HOLD = 3  # quiet periods a vanished path may wait for a pending creation it could be the other half of
# watchdog holds a rename's first half for 0.5 s to pair it; a shorter quiet period would hand over the
# new name before the old name's event even arrived, and the pair could not be matched.
MIN_DELAY = 0.6


@dataclass
class Pending:
    """A path waiting out its debounce."""

    path: Path
    due: float
    stat: StatKey
    # Set when the file got here by a rename from another watched path: its vectors can be moved.
    moved_from: Path | None = None


class Debouncer:
    """Per-path timers; thread-safe (watchdog's thread touches, the worker pops)."""

    def __init__(
        self, delay: float, max_pending: int, *, clock: Callable[[], float] = time.monotonic,
        stat: Callable[[Path], StatKey] = stat_key,
    ) -> None:
        self._delay = max(delay, MIN_DELAY)
        self._max = max_pending
        self._clock = clock
        self._stat = stat
        self._pending: dict[Path, Pending] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)

    def touch(self, path: Path, *, moved_from: Path | None = None) -> bool:
        """(Re)arm the timer of ``path``; returns False (and tracks nothing) when the pending set is full."""
        snapshot = self._stat(path)
        with self._lock:
            if moved_from is not None:
                # A rename chain a→b→c within one burst is one move a→c; a pending a is absorbed by c.
                earlier = self._pending.pop(moved_from, None)
                if earlier is not None and earlier.moved_from is not None:
                    moved_from = earlier.moved_from
            item = self._pending.get(path)
            if item is None:
                if len(self._pending) >= self._max:
                    return False
                item = self._pending[path] = Pending(path, 0.0, snapshot, moved_from)
            item.due = self._clock() + self._delay
            item.stat = snapshot
            if moved_from is not None:
                item.moved_from = moved_from
            self._wake.notify_all()
            return True

    def pop_due(self, limit: int = 64) -> list[Pending]:
        """Up to ``limit`` paths whose quiet period is over and whose file stopped changing."""
        now = self._clock()
        with self._lock:
            present_waiting = any(p.stat is not None and p.due > now for p in self._pending.values())
            due = [p for p in self._pending.values() if p.due <= now and not (
                present_waiting and p.stat is None and p.moved_from is None and now < p.due + HOLD * self._delay)]
            due.sort(key=lambda p: p.due)
            ready: list[Pending] = []
            for item in due:
                if len(ready) >= limit:
                    break
                current = self._stat(item.path)
                if current != item.stat:  # still being written without events reaching us: wait more
                    item.stat = current
                    item.due = now + self._delay
                    continue
                ready.append(self._pending.pop(item.path))
            return ready

    def wait(self, timeout: float) -> None:
        """Sleep until the next timer could be due, a touch arrives, or ``timeout`` passes."""
        with self._lock:
            if self._pending:
                timeout = min(timeout, max(0.0, min(p.due for p in self._pending.values()) - self._clock()))
            if timeout > 0:
                self._wake.wait(timeout)

    def discard_under(self, root: Path) -> None:
        """Forget pending paths below ``root`` (it is being rescanned anyway)."""
        with self._lock:
            for path in [p for p in self._pending if p.is_relative_to(root)]:
                del self._pending[path]

    def vanished(self) -> list[Path]:
        """Pending paths that were gone when last touched (candidates for the old half of a move)."""
        with self._lock:
            return [p.path for p in self._pending.values() if p.stat is None]

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def count_under(self, root: Path) -> int:
        """Pending paths below ``root``."""
        with self._lock:
            return sum(1 for p in self._pending if p.is_relative_to(root))
