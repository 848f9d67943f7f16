"""On-disk layout of an ``EdgeStore`` collection: directory, process lock and model registry.

    <data_dir>/<collection>/
        .lock            exclusive flock held while a store has the collection open
        collection.json  which embedding model and dense size built the vectors (the registry)
        shard/           the qdrant-edge shard (segments + WAL)

The registry is written (atomically) before the shard is created, so a crash in between leaves a registry
without a shard, which the next open completes; a shard without a registry is refused rather than guessed at.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from freki.store.base import CollectionSpec
from freki.store.errors import StoreError, StoreUnavailable

REGISTRY_FORMAT = 1


@dataclass(frozen=True)
class CollectionPaths:
    """Where the files of one collection live."""

    root: Path

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def registry(self) -> Path:
        return self.root / "collection.json"

    @property
    def shard(self) -> Path:
        return self.root / "shard"

    def shard_exists(self) -> bool:
        """True when the shard directory holds engine files (an empty directory does not count)."""
        return self.shard.is_dir() and any(self.shard.iterdir())


def acquire_lock(paths: CollectionPaths, data_dir: Path) -> IO[bytes]:
    """Take the collection's exclusive lock; the returned file must stay open while the store is open."""
    paths.root.mkdir(parents=True, exist_ok=True)
    handle = open(paths.lock, "a+b")  # noqa: SIM115 - lives as long as the store, closed by release_lock
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise StoreUnavailable(
            f"data dir {data_dir} (collection {paths.root.name!r}) is in use by another process or store; "
            "stop the other Freki instance or point this one at a different data dir"
        ) from None
    return handle


def release_lock(handle: IO[bytes]) -> None:
    """Release a lock taken by ``acquire_lock``."""
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def write_registry(paths: CollectionPaths, spec: CollectionSpec) -> None:
    """Record the collection's model, dense size and sparse flag, atomically (temp file + rename + fsync)."""
    record = {
        "format": REGISTRY_FORMAT,
        "collection": spec.name,
        "embedding_model": spec.embedding_model,
        "dense_dim": spec.dense_dim,
        "sparse": spec.sparse,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    fd, tmp = tempfile.mkstemp(dir=paths.root, prefix=".collection.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, paths.registry)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(paths.root, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)


def read_registry(paths: CollectionPaths) -> dict[str, object]:
    """Load the registry, raising a StoreError that names the file if it is unreadable."""
    try:
        record = json.loads(paths.registry.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"cannot read collection registry {paths.registry}: {exc}; restore the file from a backup or "
            "re-index into a new collection"
        ) from exc
    if not isinstance(record, dict) or record.get("format") != REGISTRY_FORMAT:
        raise StoreError(
            f"collection registry {paths.registry} has an unknown format; expected format {REGISTRY_FORMAT}"
        )
    return record
