"""Confirmed tool calls claimed in one SQLite file, so every process resuming the same conversations runs a
confirmed call once (a double click or a retried request may reach another worker or replica).

Same contract as :class:`~odin_client.tools.confirmations.IdempotencyLog`; the claim is one ``BEGIN
IMMEDIATE`` transaction, so two processes claiming one key at once cannot both win. A claim whose run never
recorded its result (the process stopped mid-run) is not run again: the call may have had its effect, and
"once" means at most once.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path

from odin_client.tools.confirmations import RUNNING, IdempotencyLog, IdempotencyLogUnavailable

log = logging.getLogger("odin.tools")

_SCHEMA = ("CREATE TABLE IF NOT EXISTS confirmed_calls ("
           "key TEXT PRIMARY KEY, result TEXT, claimed_at REAL NOT NULL)")
_INDEX = "CREATE INDEX IF NOT EXISTS confirmed_calls_claimed ON confirmed_calls (claimed_at)"


class SqliteIdempotencyLog(IdempotencyLog):
    """Keys and results of confirmed calls in ``path``, the newest ``max_entries`` kept.

    Args:
        path: The SQLite file every sharing process names (created with its folder).
        secret: Signs the keys; the same for every sharing process (pending calls made by one are resumed
            by another).
        busy_timeout_s: How long a claim waits for another process's claim to end.

    Raises:
        IdempotencyLogUnavailable: the file or its folder cannot be made, opened or read as this log.
    """

    def __init__(self, path: Path, secret: bytes, max_entries: int = 10_000, busy_timeout_s: float = 30.0) -> None:
        super().__init__(max_entries, secret)
        self._path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
            self._set_up(time.monotonic() + busy_timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise self._unavailable(exc, "cannot be used") from None
        self._db_lock = threading.Lock()

    def _set_up(self, deadline: float) -> None:
        """WAL mode and the table. Workers starting together race for the switch to WAL, where SQLite
        answers "database is locked" at once instead of waiting: the set-up is tried again until ``deadline``."""
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(_SCHEMA)
                self._db.execute(_INDEX)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    def _unavailable(self, exc: BaseException, what: str) -> IdempotencyLogUnavailable:
        return IdempotencyLogUnavailable(
            f"the tool_idempotency_log {self._path} {what} ({exc}): check the file, its folder and the disk, or "
            "restore it (ODIN_TOOL_IDEMPOTENCY_LOG)")

    def claim(self, key: str) -> str | None:
        with self._db_lock:
            try:
                row = self._claim(key)
            except sqlite3.Error as exc:  # locked past the timeout, read-only, a full disk, a damaged file
                raise self._unavailable(exc, "cannot claim the call") from None
        if row is None:
            return None
        return RUNNING if row[0] is None else str(row[0])

    def _claim(self, key: str) -> tuple[str | None] | None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._db.execute("SELECT result FROM confirmed_calls WHERE key=?", (key,)).fetchone()
            if row is None:
                self._db.execute("INSERT INTO confirmed_calls (key, result, claimed_at) VALUES (?, NULL, ?)",
                                 (key, time.time()))
                self._db.execute("DELETE FROM confirmed_calls WHERE key IN (SELECT key FROM confirmed_calls "
                                 "ORDER BY claimed_at DESC LIMIT -1 OFFSET ?)", (self._max,))
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        return row  # type: ignore[no-any-return]

    def finish(self, key: str, result: str) -> None:
        """Record the result; one that cannot be written is logged, not raised: the call has run and its result
        goes to the caller all the same (a re-sent confirmation then finds the call still "running")."""
        with self._db_lock:
            try:
                self._db.execute("UPDATE confirmed_calls SET result=? WHERE key=?", (result, key))
            except sqlite3.Error as exc:
                log.warning("%s; the call ran, its result was not recorded", self._unavailable(exc, "cannot "
                                                                                             "record a result"))

    def close(self) -> None:
        """Close the file."""
        with self._db_lock:
            self._db.close()
