"""A bounded cache of retrieval results, dropped for a tenant on any write to it.

Key: the tenant, the tenant's write epoch and the whole validated query (text, mode, top_k, threshold,
filters, document ids, variants, MMR, re-ranking). Any write that can change what a tenant's queries return
(a document indexed, re-indexed, moved or deleted, an owner erased, a full re-index) calls ``invalidate``:
the tenant's entries go at once and its epoch moves on, so a query that was already running when the write
landed cannot store its (now stale) result where later queries would find it.

Size is counted in bytes (payload strings plus a fixed overhead per hit); the least recently used entries
go first. Only this process's writes are seen: with replicas sharing a collection (``store.shared``)
the cache is off, since another replica's write would not reach it.

The epochs are kept with the cache off too: RAGContext.index_epoch reports them, so that a caller (Geri's
answer cache) can tell whether a tenant's index changed. They start from the process's start time in
microseconds, so a restarted Freki never reports an epoch it reported before the restart for other content.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

_L = TypeVar("_L", bound=list)  # type: ignore[type-arg]
_OVERHEAD = 200  # bytes per hit beyond its strings: objects, dict slots, the score


def hit_bytes(payload: dict[str, Any]) -> int:
    """Approximate memory of one hit's payload."""
    return _OVERHEAD + sum(len(str(k)) + len(str(v)) for k, v in payload.items())


class ResultCache:
    """Thread-safe LRU of result lists under a byte budget; ``max_bytes`` 0 turns it off."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int, str], tuple[list[Any], int]] = OrderedDict()
        self._by_tenant: dict[str, set[tuple[str, int, str]]] = {}
        self._epochs: dict[str, int] = {}
        self._first_epoch = time.time_ns() // 1000
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def lookup(self, tenant: str, query_key: str, compute: Callable[[], _L],
               size: Callable[[Any], int]) -> _L:
        """The cached result of ``query_key`` in ``tenant``, else ``compute()`` (stored if it fits).

        Results are lists (or list subclasses with attributes); each caller gets its own shallow copy."""
        if self.max_bytes <= 0:
            return compute()
        with self._lock:
            key = (tenant, self._epochs.get(tenant, 0), query_key)
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return copy.copy(found[0])  # type: ignore[return-value]
            self.misses += 1
        result = compute()
        cost = len(query_key) + sum(size(h) for h in result)
        if cost > self.max_bytes:
            return result
        with self._lock:
            if key[1] != self._epochs.get(tenant, 0) or key in self._entries:
                return result  # a write landed meanwhile: this result may be stale
            self._entries[key] = (result, cost)
            self._by_tenant.setdefault(tenant, set()).add(key)
            self.bytes += cost
            while self.bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))
        return copy.copy(result)

    def epoch(self, tenant: str) -> int:
        """``tenant``'s index epoch: a new value after every write to it (and after a restart)."""
        with self._lock:
            return self._first_epoch + self._epochs.get(tenant, 0)

    def invalidate(self, tenant: str) -> None:
        """Something in ``tenant`` changed: forget its results, including those being computed."""
        with self._lock:
            self._epochs[tenant] = self._epochs.get(tenant, 0) + 1
            if self.max_bytes <= 0:
                return
            for key in list(self._by_tenant.get(tenant, ())):
                self._drop(key)

    def invalidate_all(self) -> None:
        """Something every tenant's results depend on changed (the type registry's weights): forget them all."""
        with self._lock:
            tenants = set(self._by_tenant) | set(self._epochs)
        for tenant in tenants:
            self.invalidate(tenant)

    def _drop(self, key: tuple[str, int, str]) -> None:
        _, cost = self._entries.pop(key)
        self.bytes -= cost
        keys = self._by_tenant.get(key[0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_tenant[key[0]]
