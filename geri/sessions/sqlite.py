"""Sessions in one SQLite file, so replicas behind one address share conversations (on a shared volume).

SQLite's own locking serialises writers across processes; ``busy_timeout`` makes a writer wait for
another instead of failing. ``secure_delete`` overwrites deleted rows with zeros, and the WAL is
checkpointed and truncated after every delete, so an erased conversation does not stay readable in
the file. Suitable for replicas on one host or a local volume; not for a network filesystem whose
locks SQLite cannot trust (docs/operations.md, Sessions).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from geri.sessions.sqlite_schema import COLUMNS, ensure_schema
from geri.sessions.store import SessionRecord, Turn, extended
from geri.settings import SessionSettings


class SqliteSessionStore:
    """One connection per store, used under a lock (SQLite serialises writes anyway)."""

    def __init__(self, path: Path, settings: SessionSettings, clock: Callable[[], float] = time.time) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), timeout=10.0, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute("PRAGMA busy_timeout=10000")
        if ensure_schema(self._db):
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the old table's pages, zeroed, leave the WAL

    def _row(self, tenant: str, session_id: str, user: str) -> SessionRecord | None:
        row = self._db.execute(
            "SELECT owner_id, turns, updated_at, expires_at FROM sessions "
            "WHERE tenant=? AND user_id=? AND session_id=?",
            (tenant, user, session_id),
        ).fetchone()
        if row is None or row[3] <= self._clock():
            return None
        turns = tuple(Turn.from_json(t) for t in json.loads(row[1]))
        return SessionRecord(tenant, session_id, row[0], turns, row[2], row[3], user)

    def get(self, tenant: str, session_id: str, *, user: str) -> SessionRecord | None:
        with self._lock:
            return self._row(tenant, session_id, user)

    def append(self, tenant: str, session_id: str, owner_id: str, turns: Sequence[Turn], *,
               user: str) -> SessionRecord:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")  # read-modify-write, safe against another replica
            try:
                new = extended(self._row(tenant, session_id, user), tenant, session_id, owner_id, turns,
                               self._settings, self._clock(), user)
                written = self._db.execute(
                    f"INSERT OR REPLACE INTO sessions ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (tenant, user, session_id, new.owner_id, json.dumps([t.to_json() for t in new.turns]),
                     new.updated_at, new.expires_at),
                ).lastrowid
                self._evict(tenant, written)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            return new

    def _evict(self, tenant: str, written: int | None) -> None:
        """Drop expired sessions, then ``tenant``'s least recently used beyond ``max_sessions_per_tenant``,
        then the least recently used of all beyond ``max_sessions``. The session just ``written`` is always
        kept: writes within one clock tick, or a clock set back, must not evict it."""
        self._db.execute("DELETE FROM sessions WHERE expires_at <= ?", (self._clock(),))
        self._db.execute(
            "DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE tenant=? AND rowid IS NOT ? "
            "ORDER BY updated_at DESC, rowid DESC LIMIT -1 OFFSET ?)",
            (tenant, written, self._settings.max_sessions_per_tenant - 1),
        )
        self._db.execute(
            "DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE rowid IS NOT ? "
            "ORDER BY updated_at DESC, rowid DESC LIMIT -1 OFFSET ?)", (written, self._settings.max_sessions - 1),
        )

    def _erase(self, where: str, args: tuple[str, ...]) -> int:
        with self._lock:
            deleted = self._db.execute(f"DELETE FROM sessions WHERE {where}", args).rowcount
            # Deleted rows are zeroed in the main file (secure_delete); their old pages can still sit in
            # the WAL until a checkpoint copies the zeroed pages back and truncates it.
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return int(deleted)

    def delete(self, tenant: str, session_id: str, *, user: str) -> bool:
        return self._erase("tenant=? AND user_id=? AND session_id=?", (tenant, user, session_id)) > 0

    def delete_owner(self, tenant: str, owner_id: str) -> int:
        return self._erase("tenant=? AND owner_id=?", (tenant, owner_id))

    def close(self) -> None:
        with self._lock:
            self._db.close()
