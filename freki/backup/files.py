"""File copies that keep holes, and durable writes: the engine's files are mostly sparse (pre-allocated
memory maps and log files, a few MiB of data in 32 MiB), so a plain copy would write (and a backup hold)
the zeros too."""

from __future__ import annotations

import errno
import os
from pathlib import Path


def copy_sparse(source: str | Path, target: str | Path) -> None:
    """Copy ``source`` to a new file ``target``, writing only its data extents (holes stay holes)."""
    src = os.open(source, os.O_RDONLY)
    try:
        size = os.fstat(src).st_size
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for start, end in _extents(src, size):
                _copy_range(src, dst, start, end)
            os.ftruncate(dst, size)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _extents(fd: int, size: int) -> list[tuple[int, int]]:
    """(start, end) of each data region; the whole file where the file system cannot tell."""
    extents, offset = [], 0
    try:
        while offset < size:
            start = os.lseek(fd, offset, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
            extents.append((start, min(end, size)))
            offset = end
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # no data after offset: the rest is a hole
            return extents
        return [(0, size)]
    return extents


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    offset = start
    while offset < end:
        try:
            copied = os.copy_file_range(src, dst, end - offset, offset, offset)
        except OSError:  # a file system without copy_file_range between these files
            block = os.pread(src, min(end - offset, 1 << 20), offset)
            copied = os.pwrite(dst, block, offset)
        if copied == 0:
            raise OSError(f"copy stopped at byte {offset:,} of {end:,}: the file shrank while being copied")
        offset += copied


def write_durably(path: Path, data: bytes) -> None:
    """A new file with ``data``, fsynced (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (a rename or a new entry in it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
