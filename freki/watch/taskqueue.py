"""The watcher's work queue: bounded, shared by several workers, never two tasks on one document at once.

Every task names the documents it touches (its keys: the file's document id, and for a move the source's
too). A worker takes the oldest task none of whose keys is in work; a task whose document is busy waits
in place, and so does every later task sharing a key with a waiting one, so the tasks of one document run
one at a time in the order they came (a change made while the file is indexed is indexed after it, a
deletion after a move that reads the vanished path's vectors). Tasks of other documents pass them by.

Memory is bounded: ``put`` blocks while ``maxsize`` tasks wait (a folder scan of any size waits here).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(eq=False)  # identity: two equal tasks are still two entries
class _Entry(Generic[T]):
    item: T
    keys: frozenset[Hashable] = field(default_factory=frozenset)
    queued_at: float = field(default_factory=time.monotonic)


class KeyedTaskQueue(Generic[T]):
    """FIFO per key, parallel across keys; thread-safe."""

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._waiting: deque[_Entry[T]] = deque()
        self._busy: set[Hashable] = set()
        self._cond = threading.Condition(threading.Lock())

    def put(self, item: T, keys: Iterable[Hashable], timeout: float) -> bool:
        """Queue ``item``; False when the queue stayed full for ``timeout`` seconds."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._waiting) < self._maxsize, timeout):
                return False
            self._waiting.append(_Entry(item, frozenset(keys)))
            self._cond.notify_all()
            return True

    def take(self, timeout: float) -> tuple[T, frozenset[Hashable]] | None:
        """The oldest task whose keys are all free, its keys now claimed (``done`` frees them); None on timeout."""
        with self._cond:
            found: list[tuple[T, frozenset[Hashable]]] = []

            def ready() -> bool:
                entry = self._first_free()
                if entry is None:
                    return False
                self._waiting.remove(entry)
                self._busy |= entry.keys
                found.append((entry.item, entry.keys))
                return True

            if not self._cond.wait_for(ready, timeout):
                return None
            self._cond.notify_all()  # a producer waiting for room
            return found[0]

    def done(self, keys: frozenset[Hashable]) -> None:
        """Free the keys of a task taken with ``take``; the tasks waiting on them may go."""
        with self._cond:
            self._busy -= keys
            self._cond.notify_all()

    def wake(self) -> None:
        """Wake every waiting caller (they re-check their conditions, e.g. a stop flag after their timeout)."""
        with self._cond:
            self._cond.notify_all()

    def qsize(self) -> int:
        """Tasks waiting (not those in work)."""
        with self._cond:
            return len(self._waiting)

    def oldest_wait(self) -> float:
        """Seconds the oldest waiting task has waited (0 when none waits)."""
        with self._cond:
            return time.monotonic() - self._waiting[0].queued_at if self._waiting else 0.0

    def _first_free(self) -> _Entry[T] | None:
        blocked = set(self._busy)
        for entry in self._waiting:
            if not entry.keys & blocked:
                return entry
            blocked |= entry.keys  # later tasks of these documents wait behind this one
        return None
