"""Replicas and watched folders: one replica holds the lease and watches; another takes over when it stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from freki.engine import FrekiEngine
from freki.watch.watcher import Watcher
from tests.freki.shared_engine_support import SharedEngine, shared_store_settings
from tests.freki.watch.conftest import TENANT, paragraphs, wait_for, watch_settings

pytestmark = pytest.mark.integration


def test_one_replica_watches_and_the_other_takes_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder,  # type: ignore[no-untyped-def]
) -> None:
    SharedEngine().install(monkeypatch)
    folder = tmp_path / "inbox"
    folder.mkdir()
    lease = tmp_path / "watch.lease"
    engines, watchers = [], []
    for name in ("a", "b"):
        base = watch_settings(tmp_path / name, folder, lease_file=str(lease), lease_retry_s=0.2)
        settings = base.model_copy(update={
            k: type(getattr(base, k)).model_validate(v) for k, v in shared_store_settings(tmp_path).items()})
        engine = FrekiEngine(settings, embedder=embedder)
        watcher = Watcher(engine, settings)
        watcher.start()
        engines.append(engine)
        watchers.append(watcher)
    a, b = watchers
    try:
        assert a.lease is not None and a.lease.held
        assert b.lease is not None and not b.lease.held
        assert "pid" in b.lease.holder()
        (folder / "wolves.md").write_text(paragraphs("wolves", 3))
        wait_for(lambda: engines[1].registry.get(TENANT, "docs/wolves.md") is not None, what="wolves indexed")
        assert a.counts["created"] == 1 and b.counts["created"] == 0
        a.stop(5)
        (folder / "ravens.md").write_text(paragraphs("ravens", 3))  # while nobody watches
        wait_for(lambda: b.lease is not None and b.lease.held, timeout=10, what="b takes the lease")
        wait_for(lambda: engines[0].registry.get(TENANT, "docs/ravens.md") is not None, what="ravens indexed")
        assert b.counts["created"] == 1  # caught up on the file dropped meanwhile; wolves unchanged
    finally:
        for watcher in watchers:
            watcher.stop(5)
        for engine in engines:
            engine.close()
