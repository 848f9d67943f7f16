"""The key store behind crypto-shredding: one random AES-256 key per document generation.

Chunk text and the other sealed payload fields (``freki.store.sealed``) are encrypted with the key of the
document version (generation) they belong to. Destroying the key makes every copy of that text unreadable
at once: in the vector engine's segments, in its write-ahead log, in a Qdrant server's storage or a backup.
That is what makes erasure hold on disk, and it is also encryption at rest for the text.

The keys live in one SQLite file (``<data_dir>/keys.sqlite``, mode 0600) opened with ``secure_delete``
(deleted rows are overwritten with zeros, not just unlinked) and a rollback journal that is deleted at each
commit, so a destroyed key is gone from the file itself, not only from the index. With ``master_key`` set
(32 bytes, e.g. from a file outside the data dir), each stored key is itself encrypted with it, so a copy
of the data dir alone reveals no text. Why crypto-shredding: docs/decisions/0006-crypto-shredding.md.

The store records the id of the master key its keys are wrapped with (``freki.store.master_key``) and is
refused when opened with another. ``rotate`` re-wraps every key with a new master key in one SQLite
transaction: the rollback journal keeps the old wrapped set until the commit switches to the new one, so a
process killed mid-rotation leaves a hot journal that the next opener rolls back (old master key), and one
killed after the commit leaves the new set (new master key) — never a mix (decision 0340).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from freki.store.errors import KeyStoreMismatch, StoreError
from freki.store.master_key import describe, hold_lock, master_key_id
from wolf_service.faults import fault_point

KEY_BYTES = 32
_NONCE = 12


class KeyStore:
    """Per-generation data keys; thread-safe. ``get`` is served from a bounded in-memory cache."""

    def __init__(self, path: Path, *, master_key: bytes | None = None, cache_size: int = 4096,
                 exclusive: bool = False) -> None:
        if master_key is not None and len(master_key) != KEY_BYTES:
            raise StoreError(f"the master key must be {KEY_BYTES} bytes (got {len(master_key)})")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._master = AESGCM(master_key) if master_key is not None else None
        self.master_key_id = master_key_id(master_key)
        # Shared for every opener, exclusive for a rotation (freki.store.master_key.hold_lock).
        self._flock = hold_lock(self.path, exclusive=exclusive)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_size = cache_size
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA secure_delete = ON")
        self._db.execute("PRAGMA journal_mode = DELETE")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS keys (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, owner TEXT NOT NULL, "
            "document TEXT NOT NULL, key BLOB NOT NULL)"
        )
        # Ids of destroyed keys (no key material): data sealed under one of them was erased on purpose, data
        # sealed under an id never seen here belongs to another key store (freki.ingest.repair).
        self._db.execute("CREATE TABLE IF NOT EXISTS destroyed (id TEXT PRIMARY KEY)")
        self._db.execute("CREATE INDEX IF NOT EXISTS keys_owner ON keys (tenant, owner)")
        self._db.execute("CREATE INDEX IF NOT EXISTS keys_document ON keys (tenant, document)")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        try:
            self._check_master_key()
        except BaseException:
            self.close()
            raise

    def get_or_create(self, key_id: str, tenant: str, owner: str, document: str) -> bytes:
        """The key of ``key_id``, created (and made durable) on first use."""
        found = self.get(key_id)
        if found is not None:
            return found
        key = AESGCM.generate_key(bit_length=8 * KEY_BYTES)
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO keys VALUES (?, ?, ?, ?, ?)",
                             (key_id, tenant, owner, document, self._wrap(key_id, key)))
        stored = self.get(key_id)
        assert stored is not None
        return stored

    def get(self, key_id: str) -> bytes | None:
        """The key of ``key_id``, or None once destroyed (or never made)."""
        with self._lock:
            key = self._cache.get(key_id)
            if key is not None:
                self._cache.move_to_end(key_id)
                return key
            row = self._db.execute("SELECT key FROM keys WHERE id = ?", (key_id,)).fetchone()
            if row is None:
                return None
            key = self._unwrap(key_id, bytes(row[0]))
            self._cache[key_id] = key
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            return key

    def destroy(self, key_ids: Iterable[str]) -> int:
        """Destroy keys by id; returns how many existed."""
        ids = list(dict.fromkeys(key_ids))
        return self._delete("id IN ({})", ids) if ids else 0

    def destroy_owner(self, tenant: str, owner: str) -> int:
        """Destroy every key of one data owner (committed and in-progress versions alike)."""
        return self._delete("tenant = ? AND owner = ?", [tenant, owner], fixed=True)

    def destroy_document(self, tenant: str, document: str) -> int:
        """Destroy every key of one document."""
        return self._delete("tenant = ? AND document = ?", [tenant, document], fixed=True)

    def destroyed(self, key_ids: Iterable[str]) -> set[str]:
        """Which of ``key_ids`` this store held and destroyed."""
        ids = list(dict.fromkeys(key_ids))
        with self._lock:
            return {row[0] for i in range(0, len(ids), 500) for row in self._db.execute(
                f"SELECT id FROM destroyed WHERE id IN ({', '.join('?' * len(ids[i:i + 500]))})", ids[i:i + 500])}

    def forget_destroyed(self) -> None:
        """Drop the destroyed-key ids once no data refers to them (after the start-up consistency pass)."""
        with self._lock:
            self._db.execute("DELETE FROM destroyed")

    def ids_of(self, tenant: str, *, owner: str | None = None, document: str | None = None) -> list[str]:
        """The key ids of one owner's or one document's generations (what an erasure is about to destroy)."""
        column, value = ("owner", owner) if owner is not None else ("document", document)
        with self._lock:
            return [row[0] for row in self._db.execute(
                f"SELECT id FROM keys WHERE tenant = ? AND {column} = ?", (tenant, value))]

    def ids(self) -> list[str]:
        """Every key id (for the start-up consistency pass)."""
        with self._lock:
            return [row[0] for row in self._db.execute("SELECT id FROM keys")]

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._cache.clear()
            self._db.close()
            if self._flock >= 0:
                os.close(self._flock)
                self._flock = -1

    def rotate(self, new_master_key: bytes | None) -> int:
        """Re-wrap every key with ``new_master_key`` (None: store them unwrapped); returns how many.

        One transaction: a crash before the commit leaves the old master key's set (rolled back from the
        journal by the next opener), after it the new one. Destroyed keys have no material here and stay gone.
        """
        if new_master_key is not None and len(new_master_key) != KEY_BYTES:
            raise StoreError(f"the new master key must be {KEY_BYTES} bytes (got {len(new_master_key)})")
        new_master = AESGCM(new_master_key) if new_master_key is not None else None
        with self._lock:
            self._db.execute("BEGIN EXCLUSIVE")
            try:
                rows = self._db.execute("SELECT id, key FROM keys").fetchall()
                rewrapped = [(_wrap(new_master, key_id, self._unwrap(key_id, bytes(stored))), key_id)
                             for key_id, stored in rows]
                self._db.executemany("UPDATE keys SET key = ? WHERE id = ?", rewrapped)
                fault_point("keys.rotate.rewrapped")
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('master_key_id', ?)",
                                 (master_key_id(new_master_key),))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            fault_point("keys.rotate.committed")
            self._master, self.master_key_id = new_master, master_key_id(new_master_key)
        return len(rows)

    def _check_master_key(self) -> None:
        """Refuse another master key than the one the keys are wrapped with; record it on first use."""
        row = self._db.execute("SELECT value FROM meta WHERE name = 'master_key_id'").fetchone()
        if row is None:  # a new store, or one made before the id was recorded: the keys themselves decide
            sample = self._db.execute("SELECT id, key FROM keys LIMIT 1").fetchone()
            if sample is not None:
                self._unwrap(sample[0], bytes(sample[1]))
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('master_key_id', ?)", (self.master_key_id,))
            return
        if row[0] != self.master_key_id:
            raise KeyStoreMismatch(
                f"key store {self.path} is wrapped with {describe(row[0])}, but the configured gdpr.master_key_file "
                f"is {describe(self.master_key_id)}: after freki keys rotate, point gdpr.master_key_file at the new "
                "key file (freki keys id FILE prints a file's id)")

    def _delete(self, where: str, args: list[str], fixed: bool = False) -> int:
        removed = 0
        with self._lock:
            batches = [args] if fixed else [args[i : i + 500] for i in range(0, len(args), 500)]
            for batch in batches:
                clause = where if fixed else where.format(", ".join("?" * len(batch)))
                gone = [r[0] for r in self._db.execute(f"SELECT id FROM keys WHERE {clause}", batch)]
                self._db.execute("BEGIN")
                try:
                    self._db.execute(f"DELETE FROM keys WHERE {clause}", batch)
                    self._db.executemany("INSERT OR IGNORE INTO destroyed VALUES (?)", [(k,) for k in gone])
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                for key_id in gone:
                    self._cache.pop(key_id, None)
                removed += len(gone)
        return removed

    def _wrap(self, key_id: str, key: bytes) -> bytes:
        return _wrap(self._master, key_id, key)

    def _unwrap(self, key_id: str, stored: bytes) -> bytes:
        if self._master is None:
            if len(stored) != KEY_BYTES:
                raise StoreError(f"key store {self.path} holds wrapped keys; configure its master key")
            return stored
        try:
            return self._master.decrypt(stored[:_NONCE], stored[_NONCE:], key_id.encode())
        except Exception as exc:
            raise StoreError(f"key store {self.path}: a key does not unwrap with the configured master key") from exc


def _wrap(master: AESGCM | None, key_id: str, key: bytes) -> bytes:
    """``key`` as stored: AES-GCM under the master key, bound to its id (or as is without a master key)."""
    if master is None:
        return key
    nonce = os.urandom(_NONCE)
    return nonce + master.encrypt(nonce, key, key_id.encode())
