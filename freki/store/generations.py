"""``Generations``: the document generations every read of a ``SealedStore`` hides (being written, or being
retired)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from freki.store.rwlock import ReadWriteLock


class Generations:
    """Generations hidden from readers (in progress or being retired); thread-safe, counted.

    A read holds ``reading()`` from taking its snapshot until it has opened the engine's answer, and every change
    waits for such reads: so once ``swap`` returns, no read still in flight uses the old view, and the
    retired generation can be deleted without a reader finding the document half gone.
    """

    def __init__(self) -> None:
        self._hidden: Counter[str] = Counter()
        self._lock = ReadWriteLock()

    def hide(self, generation: str) -> None:
        with self._lock.write():
            self._hidden[generation] += 1

    def show(self, generation: str) -> None:
        with self._lock.write():
            self._drop(generation)

    def swap(self, shown: str, hidden: str) -> None:
        """Make ``shown`` visible and hide ``hidden`` in one step (no reader sees both or neither)."""
        with self._lock.write():
            self._hidden[hidden] += 1
            self._drop(shown)

    def _drop(self, generation: str) -> None:
        self._hidden[generation] -= 1
        if self._hidden[generation] <= 0:
            del self._hidden[generation]

    @contextmanager
    def reading(self) -> Iterator[tuple[str, ...]]:
        """The hidden generations, stable until the block ends."""
        with self._lock.read():
            yield tuple(self._hidden)

    def snapshot(self) -> tuple[str, ...]:
        with self._lock.read():
            return tuple(self._hidden)
