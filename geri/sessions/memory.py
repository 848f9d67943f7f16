"""Sessions in this process's memory: bounded by count (least recently used go first) and by expiry."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
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
        self._lock = threading.Lock()

    def get(self, tenant: str, session_id: str, *, user: str) -> SessionRecord | None:
        key = (tenant, user, session_id)
        with self._lock:
            record = self._sessions.get(key)
            if record is not None and record.expires_at <= self._clock():
                del self._sessions[key]
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
            self._sessions[key] = new
            self._sessions.move_to_end(key)
            while len(self._sessions) > self._settings.max_sessions:
                self._sessions.popitem(last=False)
            return new

    def delete(self, tenant: str, session_id: str, *, user: str) -> bool:
        with self._lock:
            return self._sessions.pop((tenant, user, session_id), None) is not None

    def delete_owner(self, tenant: str, owner_id: str) -> int:
        with self._lock:
            keys = [k for k, r in self._sessions.items() if k[0] == tenant and r.owner_id == owner_id]
            for key in keys:
                del self._sessions[key]
            return len(keys)

    def close(self) -> None:
        with self._lock:
            self._sessions.clear()
