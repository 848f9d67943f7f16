"""Restore into a Freki on a Qdrant server (``store.backend`` remote): the collections go to the server.

The backup's collections are extracted into ``<data_dir>/qdrant`` as for the embedded engine, checked and
purged of erased generations there (``freki.backup.reapply``), then copied point by point — ids, dense and
sparse vectors, payloads with their sealed blobs and integrity checks — into the server's collections, named
as the configured Freki names them (the backup's ``store.collection`` prefix replaced by the configured
one). Each collection is verified after the copy: the same number of points and the same digest (recomputed
from both sides) of ids, payloads and sparse vectors. The staging copy is then deleted from the data dir.

A server collection that already holds points is refused (never merge into live data) unless ``replace`` is
given, which drops it first. The collections being written are recorded in the restore marker, so a restore
killed half-way is run again with the same command: it empties its own data dir and rewrites those
collections, and Freki refuses to start on the data dir until then.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from freki.backup.manifest import Manifest
from freki.backup.reapply import collections
from freki.engine.config import store_config
from freki.settings import FrekiSettings
from freki.store import EdgeStore, make_store
from freki.store.base import StoredPoint
from freki.store.migrate import copy_collection, recorded_spec
from freki.store.remote import RemoteStore
from wolf_service.errors import FailedPrecondition
from wolf_service.faults import fault_point

STAGING = "qdrant"  # where a backup holds the embedded engine's collections (store_config of an edge Freki)
REPLACE_FLAG = "--replace-collections"
_PAGE = 512


@dataclass(frozen=True)
class Uploaded:
    """One collection copied to the server and verified."""

    collection: str
    points: int
    digest: str


def backup_collections(manifest: Manifest) -> list[str]:
    """The collections a backup holds (directories of ``qdrant/`` with a ``collection.json``)."""
    names = set()
    for entry in manifest.files:
        parts = entry.path.split("/")
        if len(parts) == 3 and parts[0] == STAGING and parts[2] == "collection.json":
            names.add(parts[1])
    return sorted(names)


def target_name(name: str, manifest: Manifest, settings: FrekiSettings) -> str:
    """``name`` with the backup's collection prefix replaced by the configured ``store.collection``."""
    source = str(manifest.source.get("collection") or settings.store.collection)
    return settings.store.collection + name[len(source):] if name.startswith(source) else name


def _remote(settings: FrekiSettings) -> RemoteStore:
    store = make_store(store_config(settings))
    assert isinstance(store, RemoteStore)  # store.backend is "remote"
    return store


def check_targets(settings: FrekiSettings, names: list[str], *, replace: bool, owned: set[str]) -> None:
    """Refuse before anything is written when a target collection holds points (unless replaced or ours)."""
    store = _remote(settings)
    try:
        busy = []
        for name in names:
            spec = recorded_spec(store, name)
            if spec is None or name in owned or replace:
                continue
            probe = _remote(settings)
            try:
                probe.ensure_collection(spec)
                if points := probe.count([]):
                    busy.append(f"{name} ({points:,} points)")
            finally:
                probe.close()
    finally:
        store.close()
    if busy:
        raise FailedPrecondition(
            f"the Qdrant server at {settings.store.url} already holds points in {', '.join(busy)}: freki restore "
            f"never merges into live data — pass {REPLACE_FLAG} to delete those collections and restore in their "
            "place, or configure another store.collection. Nothing was restored")


def upload(settings: FrekiSettings, data_dir: Path, manifest: Manifest) -> list[Uploaded]:
    """Copy every collection of ``<data_dir>/qdrant`` to the server, verify each, then delete the staging copy."""
    staging = data_dir / STAGING
    done = []
    for name in collections(staging):
        source = EdgeStore(staging)
        target = _remote(settings)
        dest = target_name(name, manifest, settings)
        try:
            spec = recorded_spec(source, name)
            assert spec is not None  # collections() lists only directories with a collection.json
            if recorded_spec(target, dest) is not None:
                target.drop_collection(dest)  # checked empty, replaced on request, or this restore's own
            copy_collection(source, target, spec, target_name=dest, resume=True)
            fault_point("restore.uploaded")
            done.append(_verify(source, target, name, dest))
        finally:
            target.close()
            source.close()
    shutil.rmtree(staging)
    return done


def _verify(source: EdgeStore, target: RemoteStore, name: str, dest: str) -> Uploaded:
    """The server's copy has the staging copy's points: same count, same digest of what both can recompute."""
    have, want = _digest(source), _digest(target)
    if have != want:
        raise FailedPrecondition(
            f"collection {dest} on the server differs from the backup's {name} after the copy ({want[0]:,} points, "
            f"digest {want[1][:12]}; the backup: {have[0]:,}, {have[1][:12]}): was something writing to it? "
            "Run freki restore again")
    return Uploaded(dest, have[0], have[1])


def _digest(store: EdgeStore | RemoteStore) -> tuple[int, str]:
    """(points, SHA-256 over the points in id order: id, payload, sparse vector). Dense vectors are not hashed
    (each engine stores them normalised with its own arithmetic); the payload's integrity check holds their
    sketch, which the engine verifies on every read."""
    points: list[StoredPoint] = []
    offset = None
    while True:
        page, offset = store.scroll([], _PAGE, offset, with_vectors=False, with_sparse=True)
        points.extend(page)
        if offset is None:
            break
    digest = hashlib.sha256()
    for point in sorted(points, key=lambda p: p.id):
        sparse = ([list(point.sparse.indices), [round(float(v), 6) for v in point.sparse.values]]
                  if point.sparse is not None else None)
        digest.update(json.dumps([point.id, point.payload, sparse], sort_keys=True, default=str).encode())
    return len(points), digest.hexdigest()


def check_manifest_counts(store_dir: Path, manifest: Manifest) -> None:
    """Each extracted collection the manifest counted (``points:<collection>``, backups since decision 0380)
    holds that many points."""
    for key, want in sorted(manifest.counts.items()):
        if not key.startswith("points:"):
            continue
        name = key.removeprefix("points:")
        store = EdgeStore(store_dir)
        try:
            spec = recorded_spec(store, name)
            have = None
            if spec is not None:
                store.ensure_collection(spec)
                have = store.count([])
        finally:
            store.close()
        if have != want:
            raise FailedPrecondition(
                f"the backup's collection {name} holds {'no collection' if have is None else f'{have:,} points'}, "
                f"its manifest counted {want:,}: the backup is inconsistent; nothing was restored")
