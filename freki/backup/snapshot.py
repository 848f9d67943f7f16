"""Take a backup of a serving Freki: a consistent copy of its data dir, written to a directory or a tar file.

Consistency: index, delete and erasure calls and the maintenance purge wait while the files are copied
(``FrekiEngine.quiesced``); searches go on. The embedded engine writes nothing outside those calls, so the
copy is the state after the last acknowledged write — the same state a ``kill -9`` at that moment would
leave, which the engine opens by replaying its write-ahead log. The key store is copied with SQLite's
backup API. The pause is the time of a local file copy (``copy_file_range``); hashing, the manifest and the
tar file are made after writes resumed.

The backup is built in ``.<name>.part-<random>`` next to its destination and renamed into place once its
manifest is written, so a backup killed half-way is never found under its name (and lacks a manifest).
What goes in: every collection directory (chunks of each model, registry, links, kept sources), the key
store, the active-index record, the feedback logs, the watch state and a copy of the erasure log. Left out:
the audit log (it records what happened since, and restoring an older one would lose that), the search log
and lock files.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tarfile
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from freki.backup.files import copy_sparse, fsync_path, write_durably
from freki.backup.manifest import NAME as MANIFEST
from freki.backup.manifest import Manifest, describe
from freki.engine import FrekiEngine
from freki.engine.active_index import active_index_path
from freki.store.erasure_log import FILE_NAME as ERASURE_LOG
from wolf_service.errors import FailedPrecondition
from wolf_service.faults import fault_point

KEYS = "keys.sqlite"
# Never copied from the data dir: live logs and locks (see the module docstring), and the key store and
# erasure log, which are copied on their own (from wherever the settings put them).
# The search log stays out: a restore must not bring back lines an erasure removed (decision 0281). The
# quarantine list ("integrity") describes this data dir's damage, not the backup's: a restore starts without it
# (reads and the scrub find what is corrupt in what was restored), and no erased document's id comes back with it.
_SKIPPED_TOP = {"audit.jsonl.lock", KEYS, f"{KEYS}-journal", ERASURE_LOG, "search_log", "integrity"}
_SKIPPED_ANYWHERE = {".lock"}


@dataclass(frozen=True)
class BackupReport:
    """What a backup wrote and how long writes waited."""

    path: Path
    manifest: Manifest
    write_pause_ms: float
    seconds: float


def freki_version() -> str:
    try:
        return version("wolfpack-rag")
    except PackageNotFoundError:
        return "unknown"


def create_backup(engine: FrekiEngine, dest: Path, *, tar: bool = False) -> BackupReport:
    """Back up ``engine``'s index to ``dest`` (a new directory, or a gzip-compressed tar file when ``tar``).

    Raises:
        FailedPrecondition: ``dest`` exists, the store is a Qdrant server, or a model migration is running.
    """
    started = time.perf_counter()
    if engine.chunks.backend != "edge":
        raise FailedPrecondition("freki backup copies the embedded engine's files; with store.backend 'remote' take "
                                 "the Qdrant server's snapshots and copy the key store (gdpr.keys_path) with them")
    if engine.blue_green.running:
        raise FailedPrecondition("a model migration is running; back up after it has switched")
    if dest.exists():
        raise FailedPrecondition(f"{dest} already exists; choose another backup name")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.part-{uuid.uuid4().hex[:8]}"
    staging.mkdir(mode=0o700)
    try:
        manifest, pause_ms = _snapshot(engine, staging)
        write_durably(staging / MANIFEST, manifest.to_json())
        if tar:
            _tar(staging, manifest, dest)
            shutil.rmtree(staging)
        else:
            os.replace(staging, dest)
        fsync_path(dest.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BackupReport(dest, manifest, pause_ms, time.perf_counter() - started)


def _snapshot(engine: FrekiEngine, staging: Path) -> tuple[Manifest, float]:
    settings = engine.settings
    data_dir = Path(settings.data_dir)
    with engine.quiesced():
        paused = time.perf_counter()
        created = datetime.now(UTC).isoformat()
        for item in sorted(data_dir.iterdir()):
            if item.name in _SKIPPED_TOP or item.name.startswith("audit.jsonl") or item.is_symlink():
                continue
            if item.is_dir():
                _copy_tree(item, staging / item.name)
            elif item.is_file():
                copy_sparse(item, staging / item.name)
        _copy_key_store(engine.keys.path, staging / KEYS)
        record = engine.active_index_path
        if record.exists() and record != active_index_path(data_dir):
            copy_sparse(record, staging / active_index_path(Path(".")).name)
        if engine.erasures.path.exists():
            copy_sparse(engine.erasures.path, staging / ERASURE_LOG)
        counts = {"documents": engine.registry.count(None),
                  "chunks": sum(store.count([]) for store in engine.chunk_stores),
                  "keys": len(engine.keys.ids()), **_points_per_collection(engine)}
        pause_ms = (time.perf_counter() - paused) * 1000
        fault_point("backup.copied")
    files = describe(staging, (p for p in staging.rglob("*") if p.is_file()))
    for path in staging.rglob("*"):
        fsync_path(path)
    manifest = Manifest(created_at=created, freki_version=freki_version(), files=files, counts=counts,
                        source={"backend": "edge", "collection": settings.store.collection,
                                "index_version": engine.active.version,
                                # the master key a restore must open the copied key store with
                                "master_key_id": engine.keys.master_key_id},
                        write_pause_ms=round(pause_ms, 1))
    return manifest, pause_ms


def _points_per_collection(engine: FrekiEngine) -> dict[str, int]:
    """``points:<collection>``: every point the serving index's collections hold, hidden versions included (what
    the copied files hold), so a restore can count what it extracted against it."""
    index = engine.active
    stores = [*index.chunk_stores, index.registry_store, index.links_store,
              *([index.sources.store] if index.sources else [])]
    raw = [getattr(store, "inner", store) for store in stores]
    return {f"points:{store.collection}": int(store.count([])) for store in raw}


def _copy_tree(source: Path, target: Path) -> None:
    """Copy a directory's files (holes kept, symbolic links and locks skipped); the first error stops it."""
    for parent, dirs, files in os.walk(source):
        here = target / Path(parent).relative_to(source)
        here.mkdir(mode=0o700)
        dirs[:] = [d for d in dirs if not (Path(parent) / d).is_symlink()]
        for name in files:
            path = Path(parent) / name
            if name not in _SKIPPED_ANYWHERE and not path.is_symlink():
                copy_sparse(path, here / name)


def _copy_key_store(source: Path, target: Path) -> None:
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode = DELETE")
    finally:
        dst.close()
        src.close()
    os.chmod(target, 0o600)


def _tar(staging: Path, manifest: Manifest, dest: Path) -> None:
    """The manifest first (a restore reads it before any file), then the files in manifest order."""
    part = dest.with_name(f".{dest.name}.part-{uuid.uuid4().hex[:8]}")
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as raw:
            # gzip level 1: the engine's files are mostly zeros (sparse), which it squeezes at disk speed.
            with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=1, format=tarfile.PAX_FORMAT) as archive:
                archive.add(staging / MANIFEST, arcname=MANIFEST)
                for entry in manifest.files:
                    archive.add(staging / entry.path, arcname=entry.path, recursive=False)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
