"""The active-index record: which index version serves, and the model migration in progress, if any.

A small JSON file (``<data_dir>/active_index.json``, or ``reindex.active_index_path``) read at start and replaced
atomically (temp file, fsync, rename): switching to a migrated index is this one write. Without the file,
version 0 serves (the index of releases before migrations). Replicas on one shared collection read one record
(``shared_migration_refusal`` says when one of them may migrate).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from freki.settings import FrekiSettings


@dataclass(frozen=True)
class MigrationRecord:
    """A blue/green model migration: index ``target`` is being built with ``model_to``."""

    target: int
    model_from: str
    model_to: str
    started_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class ActiveIndex:
    version: int = 0
    migration: MigrationRecord | None = None


def active_index_path(data_dir: Path) -> Path:
    return Path(data_dir) / "active_index.json"


def active_index_file(settings: FrekiSettings) -> Path:
    """The record of ``settings``: ``reindex.active_index_path``, else the one in its data dir."""
    return settings.reindex.active_index_path or active_index_path(settings.data_dir)


def load_active(path: Path) -> ActiveIndex:
    """The record at ``path``; the default (version 0, no migration) when there is none."""
    if not path.exists():
        return ActiveIndex()
    raw = json.loads(path.read_text())
    migration = raw.get("migration")
    return ActiveIndex(int(raw["version"]), MigrationRecord(**migration) if migration else None)


def save_active(path: Path, active: ActiveIndex) -> None:
    """Replace the record atomically (a reader sees the old one or the new one, also after a crash)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".active_index.")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(asdict(active), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def shared_migration_refusal(settings: FrekiSettings) -> str:
    """Why this replica may not run a model migration on a shared store ("" = it may)."""
    if not settings.store.shared:
        return ""
    if not settings.reindex.shared_migration:
        return ("a model migration is refused with store.shared: it cannot see other replicas' writes and drops "
                "the old index after its switch while they still serve it. Stop every other replica, set "
                "reindex.active_index_path to a file all replicas read and reindex.shared_migration: true on this "
                "one, migrate, then start the others (docs/reindex.md)")
    if settings.reindex.active_index_path is None:
        return ("reindex.shared_migration needs reindex.active_index_path (a file every replica reads): with the "
                "record in this replica's data_dir the others would start on the dropped index after the switch")
    return ""
