"""A phase-fair readers-writer lock.

The store lets searches run side by side but makes every write batch exclusive, so a reader never sees a
half-applied batch (e.g. a document whose old chunks are deleted and new ones not yet written).

Fairness both ways: a waiting writer stops new readers from entering (a steady stream of searches cannot
starve indexing), and when a writer leaves, the readers that queued behind it go in before the next writer
(back-to-back write batches cannot starve searches).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Many concurrent readers or one writer, alternating fairly under contention."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0  # readers inside
        self._readers_waiting = 0
        self._writer = False
        self._writers_waiting = 0
        self._phase = 0  # bumped each time a writer leaves
        self._admitted = 0  # readers let in by the last writer's exit who have not entered yet

    @contextmanager
    def read(self) -> Iterator[None]:
        """Hold the lock shared for the duration of the ``with`` block."""
        with self._cond:
            arrived = self._phase
            self._readers_waiting += 1
            while self._writer or (self._writers_waiting and self._phase == arrived):
                self._cond.wait()
            self._readers_waiting -= 1
            if self._phase != arrived and self._admitted:
                self._admitted -= 1
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the lock exclusively for the duration of the ``with`` block."""
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers or self._admitted:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._phase += 1
                self._admitted = self._readers_waiting
                self._cond.notify_all()
