"""Disk watermarks on the real file system of ``tmp_path``: levels set around its actual free space."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from freki.store import ChunkPoint, CollectionSpec, StoreConfig, make_store
from freki.store.disk import MIB, DiskLevels, DiskState, DiskWatermarks, batch_need
from freki.store.errors import DiskFull

GIB = 1024 * MIB


def _free(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def test_levels_are_the_larger_of_bytes_and_percent() -> None:
    levels = DiskLevels(warn_free_bytes=GIB, warn_free_percent=10, refuse_free_bytes=512 * MIB, refuse_free_percent=1)
    assert levels.warn_at(100 * GIB) == 10 * GIB and levels.warn_at(5 * GIB) == GIB
    assert levels.refuse_at(100 * GIB) == GIB and levels.refuse_at(10 * GIB) == 512 * MIB


def test_a_write_below_the_refuse_level_is_refused_naming_disk_and_setting(tmp_path: Path) -> None:
    free = _free(tmp_path)
    seen: list[DiskState] = []
    disk = DiskWatermarks(tmp_path, DiskLevels(warn_free_bytes=0, warn_free_percent=0,
                                               refuse_free_bytes=free + 8 * GIB, refuse_free_percent=0))
    disk.listeners.append(seen.append)
    with pytest.raises(DiskFull) as refused:
        disk.check_write("index document 'a'")
    assert str(tmp_path) in str(refused.value) and "disk.refuse_free_bytes" in str(refused.value)
    assert disk.refused == 1 and [s.level for s in seen] == ["refuse"]


def test_deletions_go_on_to_half_the_refuse_level_and_big_batches_need_room(tmp_path: Path) -> None:
    free = _free(tmp_path)
    disk = DiskWatermarks(tmp_path, DiskLevels(warn_free_bytes=0, warn_free_percent=0,
                                               refuse_free_bytes=free - 64 * MIB, refuse_free_percent=0))
    disk.check_write("small write")  # 1 MiB fits above the level
    with pytest.raises(DiskFull):
        disk.check_write("big write", 128 * MIB)
    tight = DiskWatermarks(tmp_path, DiskLevels(0, 0, free + 64 * MIB, 0))
    tight.check_write("delete", deletion=True)  # below the refuse level, above half of it


def test_the_store_refuses_a_batch_and_writes_nothing(tmp_path: Path) -> None:
    store = make_store(StoreConfig(backend="edge", data_dir=tmp_path))
    store.ensure_collection(CollectionSpec("c", dense_dim=4, embedding_model="m", sparse=False))
    point = ChunkPoint("6f1c7a8e-3b1f-4e1a-9a55-0b1d2c3e4f50", [1.0, 0.0, 0.0, 0.0], None, {"tenant_id": "t"})
    assert batch_need([point]) > MIB
    store.disk = DiskWatermarks(tmp_path, DiskLevels(0, 0, _free(tmp_path) + GIB, 0))  # type: ignore[attr-defined]
    with pytest.raises(DiskFull):
        store.upsert([point])
    assert store.count([]) == 0
    store.disk = None  # type: ignore[attr-defined]
    store.upsert([point])
    assert store.count([]) == 1
    store.close()
