"""The key store's master key: its public id, and the lock that keeps a rotation away from a running Freki.

A master key is named by an id derived from it (HMAC-SHA256 of a fixed label, 16 hex digits): the key store
records the id of the key its data keys are wrapped with, a backup's manifest copies it, and every refusal
names both ids, so an operator holding several key files can tell which one a store or a backup needs. The
id reveals nothing of the key.

The lock is an ``flock`` on the key store file itself (independent of SQLite's own POSIX locks on Linux):
every opener holds it shared, a rotation holds it exclusively, so ``freki keys rotate`` is refused while any
Freki (or replica sharing ``gdpr.keys_path``) has the store open, and such a Freki cannot start mid-rotation.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
from pathlib import Path

from freki.store.errors import StoreError

NO_MASTER_KEY = "none"
_LABEL = b"wolfpack freki key store master key id v1"


def master_key_id(master_key: bytes | None) -> str:
    """The public id of ``master_key`` (``"none"`` when data keys are stored unwrapped)."""
    if master_key is None:
        return NO_MASTER_KEY
    return hmac.new(master_key, _LABEL, hashlib.sha256).hexdigest()[:16]


def describe(key_id: str) -> str:
    """``"master key <id>"``, or ``"no master key"`` for a store whose keys are not wrapped."""
    return "no master key" if key_id == NO_MASTER_KEY else f"master key {key_id}"


def read_master_key(path: Path) -> bytes:
    """A master key file: 32 raw bytes or 64 hex digits (surrounding whitespace ignored)."""
    raw = Path(path).read_bytes().strip()
    try:
        key = bytes.fromhex(raw.decode("ascii")) if len(raw) == 64 else raw
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"master key file {path} must hold 32 bytes or 64 hex digits") from exc
    if len(key) != 32:
        raise ValueError(f"master key file {path} must hold 32 bytes or 64 hex digits (it holds {len(raw)} bytes)")
    return key


def write_new_master_key(path: Path) -> bytes:
    """Create ``path`` (mode 0600, refused if it exists) holding a fresh random key as 64 hex digits."""
    key = os.urandom(32)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        os.write(fd, key.hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    parent = os.open(Path(path).parent, os.O_RDONLY)
    try:
        os.fsync(parent)
    finally:
        os.close(parent)
    return key


def hold_lock(path: Path, *, exclusive: bool) -> int:
    """An fd on ``path`` holding a shared (openers) or exclusive (rotation) flock; close it to release."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        if exclusive:
            raise StoreError(f"key store {path} is open in another process (a running Freki or a replica sharing "
                             "gdpr.keys_path): stop every Freki using it before rotating its master key") from None
        raise StoreError(f"key store {path} is being re-wrapped by freki keys rotate: start Freki once it "
                         "has finished") from None
    return fd
