"""Purging deleted data from an edge shard's files: its segments and its write-ahead log.

``optimize()`` (run by ``GuardedStore.purge`` first, with the shard's vacuum thresholds at their minimum)
rewrites every segment holding a deleted point. The write-ahead log still holds the operations: qdrant-edge
keeps them in 32 MiB segment files, deletes a file only once a newer one is closed and flushed, and has no
call to truncate it; removing the files by hand makes the engine silently ignore later updates of existing
points (operation numbers restart below the points' versions). So the log is rolled over instead:
a padding point is rewritten with 1 MiB payloads until every log file that held an operation before has
been closed, flushed and deleted (about 64 MiB written), then the padding is deleted and vacuumed too
(docs/decisions/0009-edge-durability-and-purge.md).
``tests/freki/gdpr/test_erasure_on_disk.py`` greps the whole data dir to prove it.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import qdrant_edge as qe

from freki.store.base import DENSE_VECTOR
from freki.store.errors import StoreError

MIB = 1024 * 1024
_PAD_LIMIT = 512 * MIB
# A point no caller can write (ids are uuid5/uuid4 of Freki's namespaces); it exists only during a purge.
PURGE_PADDING_ID = "00000000-0000-4000-8000-00000000fade"


def _wal_files(wal: Path) -> tuple[int, set[str]]:
    """The number of the open log file being written (the lowest ``open-N``) and the closed files' names."""
    names = [f.name for f in wal.iterdir()] if wal.is_dir() else []
    opened = [int(n[5:]) for n in names if n.startswith("open-") and n[5:].isdigit()]
    return (min(opened) if opened else 0), {n for n in names if n.startswith("closed-")}


def _rolled_over(wal: Path, first_open: int, old_closed: set[str]) -> bool:
    # Closing open-N renames it (closed-<first entry>), and inode numbers are reused, so files are followed by
    # count: every closed file now must come from an open file numbered after ``first_open`` (the engine keeps
    # the newest closed files), and none of the closed files from before may be left.
    current, closed = _wal_files(wal)
    return not (closed & old_closed) and len(closed) <= current - first_open - 1


def purge_shard(shard: qe.EdgeShard, wal: Path, dense_dim: int) -> None:
    """Roll the write-ahead log past every operation made so far, then vacuum (see the module docstring)."""
    first_open, old_closed = _wal_files(wal)
    padding = qe.Point(PURGE_PADDING_ID, {DENSE_VECTOR: [1.0] + [0.0] * (dense_dim - 1)}, {"pad": "0" * MIB})
    written = 0
    while not _rolled_over(wal, first_open, old_closed):
        if written > _PAD_LIMIT:
            raise StoreError(f"the write-ahead log in {wal} did not roll over after {written // MIB} MiB")
        for _ in range(8):
            shard.update(qe.UpdateOperation.upsert_points([padding]))
        written += 8 * MIB
        shard.flush()
    shard.update(qe.UpdateOperation.delete_points(cast("list[qe.PointId]", [PURGE_PADDING_ID])))
    shard.flush()
    shard.optimize()
    shard.flush()
