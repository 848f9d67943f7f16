"""Per-document locks: one writer per document at a time, entries dropped when nobody needs them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class LockTable:
    """One lock per document being worked on; entries go away when nobody holds or waits for them."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[threading.Lock, int]] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, key: tuple[str, str]) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users <= 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)

    def __len__(self) -> int:
        with self._guard:
            return len(self._locks)
