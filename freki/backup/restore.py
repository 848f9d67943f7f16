"""``freki restore``: a backup into an empty data dir (and a Qdrant server), verified, erasures re-applied.

Order, so that nothing half-restored is ever served:

1. the backup is read whole and every file checked against its manifest (format version, the exact set of
   files, sizes, SHA-256) before anything is written;
2. the data dir must be empty (or absent), and a key store already at ``gdpr.keys_path`` is refused;
3. ``.restore-incomplete`` is written into the data dir (Freki refuses to start while it is there), then the
   files are written, each checked again as it is written;
4. each collection holds the points the manifest counted (``points:<collection>``), and the key store must
   match the collections: it unwraps with the master key the backup names (the
   configured one, or ``backup_master_key`` for a backup taken before a rotation, after which the restored
   store is re-wrapped with the configured key), and every sealed record's key is in it (held or destroyed);
5. the erasure log is re-applied (``freki.backup.reapply``) and merged into the target's erasure log;
6. the marker is removed. Any failure before that empties the data dir again; a ``kill -9`` leaves the
   marker, so the half-restored dir is refused until it is emptied and the restore run again.

For a Freki on a Qdrant server (``store.backend`` remote) the collections are copied to the server after step
5 and verified there (``freki.backup.remote_target``); the marker names them, and running the same restore
again after a kill starts over by itself.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from freki.backup import remote_target
from freki.backup.files import fsync_path
from freki.backup.manifest import BackupInvalid, Manifest
from freki.backup.reapply import Reapplied, collections, reapply
from freki.backup.snapshot import KEYS
from freki.backup.source import BackupSource
from freki.engine.active_index import active_index_file, active_index_path
from freki.engine.config import master_key, store_config
from freki.engine.restore_marker import RESTORE_MARKER
from freki.settings import FrekiSettings
from freki.store import EdgeStore, scroll_pages
from freki.store.erasure_log import FILE_NAME as ERASURE_LOG
from freki.store.erasure_log import ErasureEntry, ErasureLog
from freki.store.errors import KeyStoreMismatch, StoreError
from freki.store.keys import KeyStore
from freki.store.master_key import describe, master_key_id
from freki.store.migrate import recorded_spec
from freki.store.sealed import GENERATION
from wolf_service.errors import FailedPrecondition
from wolf_service.faults import fault_point

_SEALED = "sealed"


@dataclass(frozen=True)
class RestoreReport:
    manifest: Manifest
    reapplied: Reapplied
    seconds: float
    uploaded: list[remote_target.Uploaded] = field(default_factory=list)  # a Qdrant server's collections


def restore(backup: Path, settings: FrekiSettings, *, erasure_logs: Sequence[Path] = (),
            no_erasure_log: bool = False, backup_master_key: bytes | None = None,
            replace_collections: bool = False) -> RestoreReport:
    """Restore ``backup`` into ``settings.data_dir`` (see the module docstring).

    Raises:
        BackupInvalid: the backup is incomplete, altered, newer or not a backup.
        FailedPrecondition: the data dir is not empty, a key store is in the way, no erasure log was given, or
            a server collection holds points (without ``replace_collections``).
        KeyStoreMismatch: the key store does not belong to the collections or the master key.
    """
    started = time.perf_counter()
    remote = settings.store.backend == "remote"
    data_dir = Path(settings.data_dir)
    keys_path = settings.gdpr.keys_path or data_dir / KEYS
    owned = _unfinished_remote_restore(data_dir) if remote else set()
    _require_empty(data_dir, keys_path)
    given = _given_erasures(settings, erasure_logs, no_erasure_log)
    source = BackupSource(backup)
    source.verify()
    targets = [remote_target.target_name(n, source.manifest, settings)
               for n in remote_target.backup_collections(source.manifest)] if remote else []
    if remote:
        remote_target.check_targets(settings, targets, replace=replace_collections, owned=owned)
    configured_key = master_key(settings)
    opening_key = backup_master_key if backup_master_key is not None else configured_key
    _check_master_key(source.manifest, opening_key, configured_key)
    data_dir.mkdir(parents=True, exist_ok=True)
    marker = data_dir / RESTORE_MARKER
    marker.write_text(json.dumps({"remote_collections": targets}) if remote else "")
    fsync_path(marker)
    fsync_path(data_dir)
    written_keys = uploading = False
    try:
        source.extract(data_dir)
        fault_point("restore.extracted")
        if keys_path != data_dir / KEYS:
            keys_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(data_dir / KEYS, keys_path)
            written_keys = True
        record = active_index_file(settings)
        if record != active_index_path(data_dir) and active_index_path(data_dir).exists():
            shutil.move(active_index_path(data_dir), record)
        restored_log = data_dir / ERASURE_LOG  # the backup's copy of the erasure log, if it had one
        entries = _unique([*ErasureLog(restored_log).entries(), *given])
        if settings.gdpr.erasure_log is not None:
            restored_log.unlink(missing_ok=True)  # the configured log is the one that counts
        keys = KeyStore(keys_path, master_key=opening_key)
        uploaded: list[remote_target.Uploaded] = []
        try:
            edge_dir = None if remote else store_config(settings).data_dir
            store_dir = Path(edge_dir or data_dir / remote_target.STAGING)
            remote_target.check_manifest_counts(store_dir, source.manifest)
            _check_keys(store_dir, keys)
            reapplied = reapply(entries, data_dir, store_dir, keys, after=source.manifest.created_at)
            if keys.master_key_id != master_key_id(configured_key):
                keys.rotate(configured_key)  # the restored store opens with the configured key only
        finally:
            keys.close()
        if remote:
            uploading = True
            uploaded = remote_target.upload(settings, data_dir, source.manifest)
        _merge_erasure_log(settings, data_dir, entries)
        marker.unlink()
        fsync_path(data_dir)
    except BaseException:
        for item in data_dir.iterdir():
            if item.name != RESTORE_MARKER:
                shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
        if written_keys:
            keys_path.unlink(missing_ok=True)
        if not uploading:  # once the server holds part of the restore, the marker keeps Freki off it
            marker.unlink()
        raise
    return RestoreReport(source.manifest, reapplied, time.perf_counter() - started, uploaded)


def _unfinished_remote_restore(data_dir: Path) -> set[str]:
    """The server collections a killed restore into ``data_dir`` was writing; its data dir is emptied (it holds
    only that restore's files), so the same restore can start over. Empty when there is none."""
    try:
        named = json.loads((data_dir / RESTORE_MARKER).read_text())["remote_collections"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    if not isinstance(named, list):
        return set()
    for item in data_dir.iterdir():
        shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
    return {str(n) for n in named}


def _require_empty(data_dir: Path, keys_path: Path) -> None:
    if data_dir.exists() and (not data_dir.is_dir() or any(data_dir.iterdir())):
        what = "an unfinished restore" if (data_dir / RESTORE_MARKER).exists() else "files"
        raise FailedPrecondition(f"data dir {data_dir} is not empty (it holds {what}); freki restore writes only "
                                 "into an empty or new data dir — choose another, or empty it yourself")
    if keys_path.exists():
        raise FailedPrecondition(f"a key store already exists at {keys_path} (gdpr.keys_path); restoring would "
                                 "replace the keys of the index it belongs to — move it away or choose another path")


def _check_master_key(manifest: Manifest, opening: bytes | None, configured: bytes | None) -> None:
    """The backup's key store opens with the key given; refused before anything is written otherwise."""
    needed = manifest.source.get("master_key_id")  # absent from backups made before rotation existed
    if needed is None or needed == master_key_id(opening):
        return
    raise KeyStoreMismatch(
        f"the backup's key store is wrapped with {describe(str(needed))}, but the key given is "
        f"{describe(master_key_id(opening))} (gdpr.master_key_file: {describe(master_key_id(configured))}): "
        "pass the master key file the backup was taken with as --master-key-file (freki keys id FILE prints "
        "a file's id); the restored key store is then re-wrapped with gdpr.master_key_file. Nothing was restored")


def _given_erasures(settings: FrekiSettings, given: Sequence[Path], no_erasure_log: bool) -> list[ErasureEntry]:
    """The entries of the erasure logs given (or the configured one), read before anything is written."""
    logs = list(given)
    configured = settings.gdpr.erasure_log
    if not logs and configured is not None and configured.exists():
        logs.append(configured)
    if not logs and not no_erasure_log:
        raise FailedPrecondition(
            "no erasure log to re-apply: erasures made after this backup was taken would come back. Pass "
            "--erasure-log FILE (gdpr.erasure_log of the Freki the backup came from; default <data_dir>/"
            f"{ERASURE_LOG}), or --no-erasure-log if there were none")
    for log in logs:
        if not log.is_file():
            raise FailedPrecondition(f"erasure log {log} does not exist")
    # A corrupt line is an error (ErasureLog.entries): an erasure is never skipped silently.
    return [entry for log in logs for entry in ErasureLog(log).entries()]


def _unique(entries: Sequence[ErasureEntry]) -> list[ErasureEntry]:
    return list({json.dumps(asdict(e), sort_keys=True): e for e in entries}.values())


def _check_keys(store_dir: Path, keys: KeyStore) -> None:
    """Every sealed registry record's key is in the key store (held or destroyed), and keys unwrap."""
    store = EdgeStore(store_dir)  # only reads each collection's collection.json
    try:
        for name in (n for n in collections(store_dir) if n.endswith("_documents")):
            spec = recorded_spec(store, name)
            assert spec is not None
            single = EdgeStore(store_dir)
            try:
                single.ensure_collection(spec)
                needed = {str(p.payload.get(GENERATION, "")) for page in scroll_pages(single, [], 512)
                          for p in page if _SEALED in p.payload}
            finally:
                single.close()
            try:
                missing = {g for g in needed if keys.get(g) is None}
            except StoreError as exc:
                raise KeyStoreMismatch(f"the backup's key store does not match the configured master key "
                                       f"(gdpr.master_key_file): {exc}; nothing was restored") from exc
            if unknown := missing - keys.destroyed(missing):
                raise KeyStoreMismatch(
                    f"{len(unknown):,} document records in {name} are sealed with keys the backup's key store never "
                    "held: the key store does not belong to these collections (altered or mixed backups); "
                    "nothing was restored")
    finally:
        store.close()


def _merge_erasure_log(settings: FrekiSettings, data_dir: Path, entries: list[ErasureEntry]) -> None:
    """The restored Freki's erasure log holds every entry re-applied (a later restore needs them too)."""
    log = ErasureLog(settings.gdpr.erasure_log or data_dir / ERASURE_LOG)
    have = {json.dumps(asdict(e), sort_keys=True) for e in log.entries()}
    for entry in entries:
        if json.dumps(asdict(entry), sort_keys=True) not in have:
            log.append(entry)


__all__ = ["BackupInvalid", "RestoreReport", "restore"]
