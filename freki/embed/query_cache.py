"""The query-embedding LRU cache every embedder (in-process or server) keeps in front of its model."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np


class QueryCache:
    """Recently embedded queries, ``size`` at most (0 = off). Thread-safe; the vectors are read-only."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_embed(self, text: str, embed: Callable[[str], np.ndarray]) -> np.ndarray:
        """``text``'s cached vector, else ``embed(text)`` (kept for next time)."""
        if self._size:
            with self._lock:
                cached = self._vectors.get(text)
                if cached is not None:
                    self._vectors.move_to_end(text)
                    self.hits += 1
                    return cached
        vector = embed(text)
        vector.setflags(write=False)
        if self._size:
            with self._lock:
                self.misses += 1
                self._vectors[text] = vector
                while len(self._vectors) > self._size:
                    self._vectors.popitem(last=False)
        return vector
