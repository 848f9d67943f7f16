"""A backup's manifest: what it holds and how to check it (format version, files with size and SHA-256, counts).

``manifest.json`` sits at the root of a backup (directory or tar). It is written last when a backup is made, so
a backup without it is incomplete; a restore verifies every file against it before the data dir is touched
(``verify_files``), and refuses files it does not list, missing ones, a wrong size or digest, and a format
newer than this Freki reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from wolf_service.errors import FailedPrecondition

NAME = "manifest.json"
FORMAT = "wolfpack-freki-backup"
FORMAT_VERSION = 1  # the highest this Freki reads; raised when a restore needs something older ones lack
_CHUNK = 1024 * 1024


class BackupInvalid(FailedPrecondition):
    """The backup cannot be restored as it is (incomplete, altered, newer, or not a backup); nothing was written."""


@dataclass(frozen=True)
class FileEntry:
    """One file of the backup: its path (POSIX, relative), size and SHA-256."""

    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` records."""

    created_at: str  # ISO 8601, UTC: when writes were paused for the copy
    freki_version: str
    files: list[FileEntry]
    counts: dict[str, int] = field(default_factory=dict)  # documents, chunks, keys, points per collection
    source: dict[str, Any] = field(default_factory=dict)  # backend, collection, active index version
    write_pause_ms: float = 0.0
    format: str = FORMAT
    format_version: int = FORMAT_VERSION

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode()

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)


def sha256_of(handle: IO[bytes]) -> tuple[int, str]:
    """(size, hex SHA-256) of everything ``handle`` still has to read."""
    digest, size = hashlib.sha256(), 0
    while block := handle.read(_CHUNK):
        digest.update(block)
        size += len(block)
    return size, digest.hexdigest()


def describe(root: Path, paths: Iterable[Path]) -> list[FileEntry]:
    """The file entries of ``paths`` (under ``root``), in path order."""
    entries = []
    for path in paths:
        with open(path, "rb") as handle:
            size, digest = sha256_of(handle)
        entries.append(FileEntry(path.relative_to(root).as_posix(), size, digest))
    return sorted(entries, key=lambda e: e.path)


def parse(raw: bytes, where: str) -> Manifest:
    """The manifest in ``raw``; BackupInvalid naming ``where`` and what is wrong."""
    try:
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BackupInvalid(f"{where} is not a Freki backup manifest (format {data.get('format')!r})")
        version = data.get("format_version")
        if not isinstance(version, int) or version < 1:
            raise BackupInvalid(f"{where}: format_version {version!r} is not a version number")
        if version > FORMAT_VERSION:
            raise BackupInvalid(f"{where} is format {version}, written by a newer Freki "
                                f"({data.get('freki_version', '?')}); this Freki reads up to format {FORMAT_VERSION}: "
                                "restore with that version or a newer one")
        files = [FileEntry(str(f["path"]), int(f["bytes"]), str(f["sha256"])) for f in data["files"]]
        manifest = Manifest(
            created_at=str(data["created_at"]), freki_version=str(data["freki_version"]), files=files,
            counts={str(k): int(v) for k, v in data.get("counts", {}).items()}, source=dict(data.get("source", {})),
            write_pause_ms=float(data.get("write_pause_ms", 0.0)), format_version=version)
    except BackupInvalid:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BackupInvalid(f"{where} is not a readable backup manifest ({exc}): the backup is truncated or "
                            "altered") from exc
    for entry in files:
        check_member_path(entry.path, where)
    return manifest


def check_member_path(path: str, where: str) -> None:
    """Refuse a path that could land outside the data dir (absolute, ``..``, empty) or on the manifest."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or ".." in pure.parts or path == NAME or "\\" in path or "\x00" in path:
        raise BackupInvalid(f"{where} lists the path {path[:200]!r}, which a backup never holds: it is not Freki's "
                            "or it was altered")


def check_entry(entry: FileEntry, size: int, digest: str, where: str) -> None:
    """Refuse a file whose size or digest differs from its manifest entry."""
    if size != entry.bytes:
        raise BackupInvalid(f"{where}: {entry.path} is {size:,} bytes, the manifest says {entry.bytes:,}: the backup "
                            "is truncated or altered; nothing was restored")
    if digest != entry.sha256:
        raise BackupInvalid(f"{where}: {entry.path} does not match its SHA-256 in the manifest (checksum mismatch): "
                            "the backup is corrupt or altered; nothing was restored")


def check_same_files(manifest: Manifest, present: set[str], where: str) -> None:
    """Refuse a backup whose files are not exactly those its manifest lists."""
    listed = {f.path for f in manifest.files}
    if missing := sorted(listed - present):
        raise BackupInvalid(f"{where} lacks {len(missing)} file(s) its manifest lists, e.g. {missing[0]}: the backup "
                            "is incomplete; nothing was restored")
    if extra := sorted(present - listed):
        raise BackupInvalid(f"{where} holds {len(extra)} file(s) its manifest does not list, e.g. {extra[0][:200]}: "
                            "it was altered; nothing was restored")
