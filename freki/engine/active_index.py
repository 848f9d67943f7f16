"""The active-index record: which index version serves, and the model migration in progress, if any.

A small JSON file (``<data_dir>/active_index.json``) read at start and replaced atomically (temp file, fsync,
rename): switching to a migrated index is this one write. Without the file, version 0 serves (the index of
releases before migrations).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path


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
