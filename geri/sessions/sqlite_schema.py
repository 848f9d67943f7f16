"""The SQLite session table, and the migration of a file written before sessions were bound to users.

The table's key is (tenant, user_id, session_id): one user's session id never names another user's
conversation. SQLite cannot change a table's primary key with ``ALTER TABLE``, so an older file (key
(tenant, session_id), no ``user_id`` column) is rebuilt inside the same file in one transaction —
SQLite's documented procedure for such changes — and no row is lost: every row is copied with the user
it is known to belong to (docs/decisions/0320-sessions-bound-to-users.md):

- a row with no data owner was written by a caller without a user id (a user id, when present, became
  the owner of a session that had none), so it stays with callers without a user id;
- any other row could have been written by any user, so it gets ``UNKNOWN_USER``, which no caller
  holds: nobody continues or reads it, it expires after ``sessions.ttl_s`` and its owner's erasure
  removes it.
"""

from __future__ import annotations

import sqlite3

from geri.sessions.store import UNKNOWN_USER

_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    turns TEXT NOT NULL,
    updated_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (tenant, user_id, session_id)
)"""
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS sessions_owner ON sessions (tenant, owner_id)",
    "CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated_at)",
)
COLUMNS = "tenant, user_id, session_id, owner_id, turns, updated_at, expires_at"


def _columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(sessions)")}


def ensure_schema(db: sqlite3.Connection) -> bool:
    """Create the table, or migrate an older one; whether a migration ran.

    ``db`` is in autocommit mode (``isolation_level=None``). The check is repeated under the write lock,
    so two replicas opening one old file at once migrate it once.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = _columns(db)
        migrate = bool(columns) and "user_id" not in columns
        if migrate:
            db.execute("ALTER TABLE sessions RENAME TO sessions_before_users")
        db.execute(_TABLE.format(name="sessions"))
        if migrate:
            db.execute(
                f"INSERT INTO sessions ({COLUMNS}) SELECT tenant, "
                "CASE WHEN owner_id = '' THEN '' ELSE ? END, session_id, owner_id, turns, updated_at, expires_at "
                "FROM sessions_before_users", (UNKNOWN_USER,))
            db.execute("DROP TABLE sessions_before_users")  # its indexes go with it
        for statement in _INDEXES:
            db.execute(statement)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return migrate
