"""Hostile and broken backups are refused with a clear error, and nothing is half-restored: a truncated or
tampered backup (checksum mismatch), a file the manifest does not list, a path that leaves the data dir, a
backup from a newer version, a restore into a non-empty data dir, a key store that does not match the
collections or the master key, no erasure log. One real backup (real engine and model) is made per module."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from freki.backup.manifest import FORMAT_VERSION, BackupInvalid
from freki.backup.restore import restore
from freki.backup.snapshot import create_backup
from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.store.errors import KeyStoreMismatch
from tests.freki.conftest import freki_settings
from wolf_service.errors import FailedPrecondition

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def backups(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[dict[str, Path]]:  # type: ignore[no-untyped-def]
    """Two backups of two different indexes (a directory and a tar.gz of the first, a directory of the second)."""
    root = tmp_path_factory.mktemp("backups")
    made: dict[str, Path] = {}
    for name in ("one", "two"):
        engine = FrekiEngine(freki_settings(root / f"data-{name}"), embedder=embedder)
        try:
            for n in range(3):
                engine.index(IndexInput(tenant_id="t", document_id=f"{name}-{n}", owner_id="o",
                                        data=f"Index {name}, note {n}: lighthouse keepers log the weather. " * 8))
            made[name] = create_backup(engine, root / name).path
            if name == "one":
                made["tar"] = create_backup(engine, root / "one.tar.gz", tar=True).path
        finally:
            engine.close()
    yield made


def copy_of(backup: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(backup, target)
    return target


def restore_into(backup: Path, tmp_path: Path, **settings: object) -> Path:
    """Restore ``backup`` into a fresh ``tmp_path/target``; returns that data dir."""
    target = tmp_path / "target"
    restore(backup, freki_settings(target, **settings), no_erasure_log=True)
    return target


def assert_nothing_restored(tmp_path: Path) -> None:
    target = tmp_path / "target"
    assert not target.exists() or list(target.iterdir()) == [], "a refused restore leaves the data dir empty"


def rewrite_manifest(backup: Path, change) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((backup / "manifest.json").read_text())
    change(manifest)
    (backup / "manifest.json").write_text(json.dumps(manifest))


def test_a_good_backup_restores(backups: dict[str, Path], tmp_path: Path) -> None:
    target = restore_into(backups["tar"], tmp_path)
    assert (target / "keys.sqlite").exists() and not (target / ".restore-incomplete").exists()


def test_a_tampered_file_is_a_checksum_mismatch(backups: dict[str, Path], tmp_path: Path) -> None:
    backup = copy_of(backups["one"], tmp_path)
    victim = next(p for p in sorted(backup.rglob("page_0.dat")) if p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(BackupInvalid, match="checksum mismatch"):
        restore_into(backup, tmp_path)
    assert_nothing_restored(tmp_path)


def test_a_truncated_tar_is_refused(backups: dict[str, Path], tmp_path: Path) -> None:
    data = backups["tar"].read_bytes()
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(BackupInvalid, match="truncated|corrupt|lacks"):
        restore_into(truncated, tmp_path)
    assert_nothing_restored(tmp_path)


def test_a_truncated_file_and_a_missing_manifest_are_refused(backups: dict[str, Path], tmp_path: Path) -> None:
    backup = copy_of(backups["one"], tmp_path)
    victim = backup / "keys.sqlite"
    victim.write_bytes(victim.read_bytes()[:1000])
    with pytest.raises(BackupInvalid, match="truncated or altered"):
        restore_into(backup, tmp_path)
    (backup / "manifest.json").unlink()
    with pytest.raises(BackupInvalid, match="no manifest.json: it is incomplete"):
        restore_into(backup, tmp_path)
    assert_nothing_restored(tmp_path)


def test_files_the_manifest_does_not_list_and_paths_outside_are_refused(backups: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    backup = copy_of(backups["one"], tmp_path)
    (backup / "extra.bin").write_bytes(b"x")
    with pytest.raises(BackupInvalid, match="does not list, e.g. extra.bin"):
        restore_into(backup, tmp_path)
    evil = tmp_path / "evil.tar.gz"
    escape = {"path": "../escape", "bytes": 1, "sha256": hashlib.sha256(b"x").hexdigest()}
    manifest = {"format": "wolfpack-freki-backup", "format_version": 1, "created_at": "2026-01-01T00:00:00+00:00",
                "freki_version": "0", "files": [escape]}
    with tarfile.open(evil, "w:gz") as archive:
        for name, data in (("manifest.json", json.dumps(manifest).encode()), ("../escape", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    with pytest.raises(BackupInvalid, match="'../escape', which a backup never holds"):
        restore_into(evil, tmp_path)
    assert not (tmp_path / "escape").exists()
    assert_nothing_restored(tmp_path)


def test_a_backup_from_a_newer_version_is_refused(backups: dict[str, Path], tmp_path: Path) -> None:
    backup = copy_of(backups["one"], tmp_path)
    rewrite_manifest(backup, lambda m: m.update(format_version=FORMAT_VERSION + 1, freki_version="9.0.0"))
    with pytest.raises(BackupInvalid, match=rf"format {FORMAT_VERSION + 1}, written by a newer Freki \(9.0.0\)"):
        restore_into(backup, tmp_path)
    assert_nothing_restored(tmp_path)


def test_a_non_empty_data_dir_is_refused(backups: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "precious.txt").write_text("keep me")
    with pytest.raises(FailedPrecondition, match="is not empty"):
        restore(backups["one"], freki_settings(target), no_erasure_log=True)
    assert [p.name for p in target.iterdir()] == ["precious.txt"], "the data dir is untouched"


def test_a_key_store_from_another_backup_is_refused(backups: dict[str, Path], tmp_path: Path) -> None:
    backup = copy_of(backups["one"], tmp_path)
    foreign = (backups["two"] / "keys.sqlite").read_bytes()
    (backup / "keys.sqlite").write_bytes(foreign)  # and the manifest made to agree: only the keys are wrong

    def agree(manifest: dict) -> None:
        for entry in manifest["files"]:
            if entry["path"] == "keys.sqlite":
                entry.update(bytes=len(foreign), sha256=hashlib.sha256(foreign).hexdigest())
    rewrite_manifest(backup, agree)
    with pytest.raises(KeyStoreMismatch, match="sealed with keys the backup's key store never held"):
        restore_into(backup, tmp_path)
    assert_nothing_restored(tmp_path)


def test_a_different_master_key_is_refused(backups: dict[str, Path], tmp_path: Path) -> None:
    key = tmp_path / "master.key"
    key.write_text("ab" * 32)
    with pytest.raises(KeyStoreMismatch, match="the backup's key store is wrapped with no master key, but the key "
                                               "given is master key [0-9a-f]{16}"):
        restore_into(backups["one"], tmp_path, gdpr={"master_key_file": key})
    assert_nothing_restored(tmp_path)


def test_no_erasure_log_is_refused_unless_said_so(backups: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition, match="no erasure log to re-apply"):
        restore(backups["one"], freki_settings(tmp_path / "target"))
    with pytest.raises(FailedPrecondition, match="erasure log .*missing.jsonl does not exist"):
        restore(backups["one"], freki_settings(tmp_path / "target"), erasure_logs=[tmp_path / "missing.jsonl"])
    assert_nothing_restored(tmp_path)
