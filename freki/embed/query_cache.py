"""The query-embedding LRU cache every embedder (in-process or server) keeps in front of its model.

Entries are keyed by the asking tenant (``scope``) as well as the text: a hit is fast, so a cache shared
across tenants would tell tenant A, by timing or by the hit counter moving, that tenant B asked the same
question recently (docs/decisions/0211-tenant-side-channels.md). Each tenant finds only its own entries;
the capacity is shared, so a tenant learns at most that others asked *something*, never what.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import numpy as np


class QueryCache:
    """Recently embedded queries, ``size`` at most (0 = off). Thread-safe; the vectors are read-only."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_embed(self, text: str, embed: Callable[[str], np.ndarray], scope: str = "") -> np.ndarray:
        """``text``'s vector cached for ``scope`` (the asking tenant), else ``embed(text)`` (kept for next
        time, for ``scope`` only)."""
        key = (scope, text)
        if self._size:
            with self._lock:
                cached = self._vectors.get(key)
                if cached is not None:
                    self._vectors.move_to_end(key)
                    self.hits += 1
                    return cached
        vector = embed(text)
        vector.setflags(write=False)
        if self._size:
            with self._lock:
                self.misses += 1
                self._vectors[key] = vector
                while len(self._vectors) > self._size:
                    self._vectors.popitem(last=False)
        return vector


class EmbedQuery(Protocol):
    """A model's query embedding: ``text`` asked by ``scope`` (the tenant; its cache entries are its own)."""

    def __call__(self, text: str, scope: str = "") -> np.ndarray: ...
