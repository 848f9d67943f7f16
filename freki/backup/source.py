"""Reading a backup, a directory or a tar file, as untrusted input: its manifest, a full check of every file
against it, and extraction that re-checks each file as it is written.

A tar member that is not a regular file (a link, a device, a directory entry aside), a path that would leave
the target, a file the manifest does not list, a missing one, a different size or digest: each is refused
with ``BackupInvalid`` naming it. ``verify`` reads everything before a restore touches the data dir; ``extract``
checks again while writing, so a backup altered in between is caught too.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from freki.backup.manifest import NAME as MANIFEST
from freki.backup.manifest import (
    BackupInvalid,
    FileEntry,
    Manifest,
    check_entry,
    check_member_path,
    check_same_files,
    parse,
)

_CHUNK = 1024 * 1024
_MAX_MANIFEST_BYTES = 64 * 1024 * 1024
_ZEROS = bytes(_CHUNK)


class BackupSource:
    """A backup at ``path``: a directory holding ``manifest.json``, or a tar file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise BackupInvalid(f"backup {self.path} does not exist")
        self.is_tar = self.path.is_file()
        if self.is_tar and not tarfile.is_tarfile(self.path):
            raise BackupInvalid(f"backup {self.path} is neither a backup directory nor a tar file")
        self.manifest: Manifest = self._read_manifest()

    def _read_manifest(self) -> Manifest:
        where = f"backup {self.path}"
        if not self.is_tar:
            file = self.path / MANIFEST
            if not file.is_file():
                raise BackupInvalid(f"{where} has no {MANIFEST}: it is incomplete (a backup killed before it "
                                    "finished) or not a Freki backup; nothing was restored")
            return parse(file.read_bytes(), f"{where}: {MANIFEST}")
        try:
            with tarfile.open(self.path, "r:*") as archive:
                member = archive.next()
                if member is None or member.name != MANIFEST or not member.isfile():
                    raise BackupInvalid(f"{where} does not start with {MANIFEST}: it is not a Freki backup")
                if member.size > _MAX_MANIFEST_BYTES:
                    raise BackupInvalid(f"{where}: {MANIFEST} is {member.size:,} bytes, over {_MAX_MANIFEST_BYTES:,}")
                handle = archive.extractfile(member)
                assert handle is not None
                return parse(handle.read(), f"{where}: {MANIFEST}")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BackupInvalid(f"{where} is not a readable tar file ({exc}): truncated or corrupt") from exc

    def verify(self) -> None:
        """Check every file against the manifest, writing nothing."""
        for _entry in self._files():
            pass  # each file is read to its end and checked when the generator resumes

    def extract(self, target: Path) -> None:
        """Write every file under ``target`` (which must exist), checking each against the manifest."""
        for entry, handle in self._files():
            out = target / entry.path
            out.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                offset = 0
                while block := handle.read(_CHUNK):
                    if block != _ZEROS[:len(block)]:  # runs of zeros stay holes, as in the engine's own files
                        os.pwrite(fd, block, offset)
                    offset += len(block)
                os.ftruncate(fd, offset)
                os.fsync(fd)
            finally:
                os.close(fd)

    def _files(self) -> Iterator[tuple[FileEntry, _Checked]]:
        """Each file with a reader that checks size and digest when read to its end; then that the set of
        files is exactly the manifest's."""
        where = f"backup {self.path}"
        listed = {f.path: f for f in self.manifest.files}
        seen: set[str] = set()
        if not self.is_tar:
            present = {p.relative_to(self.path).as_posix() for p in self.path.rglob("*")
                       if p.is_file() or p.is_symlink()} - {MANIFEST}
            check_same_files(self.manifest, present, where)
            for path, entry in listed.items():
                file = self.path / path
                if file.is_symlink() or not file.is_file():
                    raise BackupInvalid(f"{where}: {path} is not a regular file; nothing was restored")
                with open(file, "rb") as handle:
                    checked = _Checked(handle, entry, where)
                    yield entry, checked
                    checked.finish()
            return
        try:
            with tarfile.open(self.path, "r:*") as archive:
                for number, member in enumerate(archive):
                    if number == 0:
                        continue  # the manifest, read already
                    check_member_path(member.name, where)
                    if not member.isfile():
                        raise BackupInvalid(f"{where}: member {member.name[:200]!r} is not a regular file "
                                            "(a link or device): a Freki backup holds files only; nothing was restored")
                    found = listed.get(member.name)
                    if found is None or member.name in seen:
                        raise BackupInvalid(f"{where} holds {member.name[:200]!r}, which its manifest does not list "
                                            "(or twice): it was altered; nothing was restored")
                    seen.add(member.name)
                    member_file = archive.extractfile(member)
                    assert member_file is not None
                    checked = _Checked(member_file, found, where)
                    yield found, checked
                    checked.finish()
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BackupInvalid(f"{where} is not a readable tar file ({exc}): truncated or corrupt") from exc
        check_same_files(self.manifest, seen, where)


class _Checked:
    """A reader that hashes what passes through and checks it against the manifest entry at the end."""

    def __init__(self, handle: IO[bytes], entry: FileEntry, where: str) -> None:
        self._handle, self._entry, self._where = handle, entry, where
        self._digest, self._size = hashlib.sha256(), 0

    def read(self, n: int = -1) -> bytes:
        block = self._handle.read(n)
        self._digest.update(block)
        self._size += len(block)
        if self._size > self._entry.bytes:
            check_entry(self._entry, self._size, "", self._where)
        return block

    def finish(self) -> None:
        while self.read(_CHUNK):
            pass
        check_entry(self._entry, self._size, self._digest.hexdigest(), self._where)
