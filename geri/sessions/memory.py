"""Sessions in this process's memory: bounded by count, per tenant and in all (least recently used go
first), and by expiry."""

from __future__ import annotations

import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence

from geri.sessions.store import SessionRecord, Turn, extended
from geri.settings import SessionSettings

# (tenant, user, session_id): the user is part of the key, so users never share a conversation.
_Key = tuple[str, str, str]


class MemorySessionStore:
    """A dict under a lock; a replica's sessions are its own (use the SQLite store to share them)."""

    def __init__(self, settings: SessionSettings, clock: Callable[[], float] = time.time) -> None:
        self._settings = settings
        self._clock = clock
        self._sessions: OrderedDict[_Key, SessionRecord] = OrderedDict()
        self._per_tenant: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _drop(self, key: _Key) -> bool:
        if self._sessions.pop(key, None) is None:
            return False
        self._per_tenant[key[0]] -= 1
        if not self._per_tenant[key[0]]:
            del self._per_tenant[key[0]]
        return True

    def _evict(self, tenant: str) -> None:
        """The tenant's least recently used beyond its bound, then anyone's beyond the total."""
        if self._per_tenant[tenant] > self._settings.max_sessions_per_tenant:
            self._drop(next(k for k in self._sessions if k[0] == tenant))
        while len(self._sessions) > self._settings.max_sessions:
            self._drop(next(iter(self._sessions)))

    def get(self, tenant: str, session_id: str, *, user: str) -> SessionRecord | None:
        key = (tenant, user, session_id)
        with self._lock:
            record = self._sessions.get(key)
            if record is not None and record.expires_at <= self._clock():
                self._drop(key)
                return None
            return record

    def append(self, tenant: str, session_id: str, owner_id: str, turns: Sequence[Turn], *,
               user: str) -> SessionRecord:
        key = (tenant, user, session_id)
        with self._lock:
            now = self._clock()
            record = self._sessions.get(key)
            if record is not None and record.expires_at <= now:
                record = None
            new = extended(record, tenant, session_id, owner_id, turns, self._settings, now, user)
            if key not in self._sessions:
                self._per_tenant[tenant] += 1
            self._sessions[key] = new
            self._sessions.move_to_end(key)
            self._evict(tenant)
            return new

    def delete(self, tenant: str, session_id: str, *, user: str) -> bool:
        with self._lock:
            return self._drop((tenant, user, session_id))

    def delete_owner(self, tenant: str, owner_id: str) -> int:
        with self._lock:
            keys = [k for k, r in self._sessions.items() if k[0] == tenant and r.owner_id == owner_id]
            for key in keys:
                self._drop(key)
            return len(keys)

    def close(self) -> None:
        with self._lock:
            self._sessions.clear()
            self._per_tenant.clear()
