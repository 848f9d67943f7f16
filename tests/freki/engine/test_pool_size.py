"""limits.parse_workers = "auto": the parser pool sized by cores, available memory and a cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from freki.engine.config import sandbox_config
from freki.engine.pool_size import AUTO_CAP, available_memory_mb, parse_pool_size, usable_cores
from freki.settings import FrekiSettings


def test_explicit_counts_are_kept() -> None:
    assert parse_pool_size(3, 1024).workers == 3
    assert sandbox_config(FrekiSettings(limits={"parse_workers": 5})).workers == 5  # type: ignore[arg-type]


@pytest.mark.parametrize("setting", ["auto", 0])
def test_auto_is_bounded_by_cores_memory_and_the_cap(setting: object) -> None:
    size = parse_pool_size(setting, 1024)  # type: ignore[arg-type]
    available = available_memory_mb()
    assert 1 <= size.workers <= min(usable_cores(), AUTO_CAP)
    if available is not None:
        assert size.workers <= max(1, available // 1024)
    assert sandbox_config(FrekiSettings()).workers == parse_pool_size("auto", 1024).workers


def test_a_cgroup_quota_and_memory_limit_shrink_the_pool(tmp_path: Path) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # 1.5 cores -> 2
    (tmp_path / "memory.max").write_text(str(3 * 1024**3))
    (tmp_path / "memory.current").write_text(str(1024**3 + 5))  # just under 2 GiB left -> 1 worker of 1 GiB
    assert usable_cores(tmp_path) <= 2
    size = parse_pool_size("auto", 1024, cgroup=tmp_path)
    assert size.workers == 1 and "1 by memory" in size.reason
    (tmp_path / "memory.max").write_text("max\n")
    by_memory = max(1, (available_memory_mb(tmp_path) or 0) // 1024)
    assert parse_pool_size("auto", 1024, cgroup=tmp_path).workers == min(usable_cores(tmp_path), by_memory, AUTO_CAP)


def test_a_bad_value_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="parse_workers"):
        FrekiSettings(limits={"parse_workers": "many"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parse_workers"):
        FrekiSettings(limits={"parse_workers": 65})  # type: ignore[arg-type]
