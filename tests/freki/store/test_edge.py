"""EdgeStore behaviour the remote engine has no counterpart for: files, locks, durability, rollback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from freki.store import (
    CollectionNotReady,
    EdgeStore,
    EmbeddingModelMismatch,
    FieldMatch,
    InvalidStoreInput,
    StoreError,
    StoreUnavailable,
)
from tests.freki.store.points_support import make_points, spec

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]


def test_data_survives_close_and_reopen(tmp_path: Path) -> None:
    points = make_points(30)
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
        store.upsert(points)
        store.delete_ids([points[0].id])
        store.optimize()
    reopened = EdgeStore(tmp_path)
    try:
        reopened.ensure_collection(spec())
        assert reopened.count([]) == 29
        assert reopened.retrieve([points[0].id]) == []
        assert reopened.retrieve([points[1].id])[0].payload == points[1].payload
        assert reopened.search_dense(list(points[7].dense), [], 1)[0].id == points[7].id
    finally:
        reopened.close()


@pytest.mark.parametrize("flush_writes", [True, False], ids=["flushed", "wal-only"])
def test_acknowledged_writes_survive_kill_9(tmp_path: Path, flush_writes: bool) -> None:
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path[:0] = [{str(REPO)!r}]
        from freki.store import StoreConfig, make_store
        from tests.freki.store.points_support import make_points, spec
        store = make_store(StoreConfig(data_dir={str(tmp_path)!r}, flush_writes={flush_writes}))
        store.ensure_collection(spec())
        points = make_points(25)
        store.upsert(points)
        store.set_payload([points[3].id], {{"owner_id": "after-kill"}})
        store.delete_ids([points[4].id])
        print("acknowledged", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "acknowledged", run.stderr
    assert run.returncode == -9
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())  # the lock of the killed process is gone with it
        assert store.count([]) == 24
        assert store.count([FieldMatch("owner_id", ("after-kill",))]) == 1


def test_second_open_of_a_data_dir_is_refused_clearly(tmp_path: Path) -> None:
    first = EdgeStore(tmp_path)
    first.ensure_collection(spec())
    second = EdgeStore(tmp_path)
    with pytest.raises(StoreUnavailable, match=f"data dir {tmp_path} .* is in use by another process"):
        second.ensure_collection(spec())
    script = f"""
import sys; sys.path[:0] = [{str(REPO)!r}]
from freki.store import EdgeStore, StoreUnavailable
from tests.freki.store.points_support import spec
try:
    EdgeStore({str(tmp_path)!r}).ensure_collection(spec())
except StoreUnavailable as exc:
    print("refused:", exc)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stdout.startswith("refused: data dir"), run.stdout + run.stderr
    first.close()
    second.ensure_collection(spec())  # free once the first store is closed
    second.close()


def test_two_collections_share_a_data_dir(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as old, EdgeStore(tmp_path) as new:
        old.ensure_collection(spec(name="v1"))
        new.ensure_collection(spec(name="v2", dim=8, model="bigger-model"))
        old.upsert(make_points(3))
        assert (old.count([]), new.count([])) == (3, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1", "v2"]


def test_model_is_recorded_next_to_the_shard_and_checked_on_reopen(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
    registry = json.loads((tmp_path / "chunks" / "collection.json").read_text())
    assert (registry["embedding_model"], registry["dense_dim"], registry["sparse"]) == (
        "test-model-v1",
        16,
        True,
    )
    with EdgeStore(tmp_path) as store:
        with pytest.raises(EmbeddingModelMismatch, match="'test-model-v1' .*'all-MiniLM-L6-v2'"):
            store.ensure_collection(spec(model="all-MiniLM-L6-v2"))
        assert store.collection is None
        with pytest.raises(CollectionNotReady, match="ensure_collection"):
            store.count([])
    # the refused open released the lock: a matching open works right away
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())


def test_shard_without_registry_is_refused(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
        store.upsert(make_points(2))
    (tmp_path / "chunks" / "collection.json").unlink()
    with EdgeStore(tmp_path) as store, pytest.raises(StoreError, match="no collection.json"):
        store.ensure_collection(spec())


def test_registry_without_shard_completes_the_interrupted_create(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
    for path in sorted((tmp_path / "chunks" / "shard").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
        store.upsert(make_points(4))
        assert store.count([FieldMatch("tenant_id", ("acme",))]) == 2


def test_failed_batch_is_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    points = make_points(10)
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
        store.upsert(points)
        before = store.retrieve([p.id for p in points], with_vectors=True)
        shard = store._shard
        assert shard is not None
        calls: list[Any] = []

        class FailingOnThirdUpdate:
            """Real shard, except the third update (the delete of the batch below) fails like a full disk."""

            def __getattr__(self, name: str) -> Any:
                return getattr(shard, name)

            def update(self, op: Any) -> None:
                calls.append(op)
                if len(calls) == 3:
                    raise OSError("No space left on device")
                shard.update(op)

        monkeypatch.setattr(store, "_shard", FailingOnThirdUpdate())
        new = make_points(3, seed=42, document_id="doc-new")
        with pytest.raises(StoreError, match="rolled back.*No space left"):
            store.apply(new, [points[0].id, points[1].id], [([points[2].id], {"owner_id": "changed"})])
        monkeypatch.setattr(store, "_shard", shard)
        assert store.count([]) == 10
        assert store.retrieve([p.id for p in new]) == []
        assert store.retrieve([p.id for p in points], with_vectors=True) == before


def test_optimize_keeps_results_and_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path)
    store.ensure_collection(spec())
    points = make_points(40)
    store.upsert(points)
    hits = store.search_dense(list(points[3].dense), [], 5)
    store.optimize()
    assert store.search_dense(list(points[3].dense), [], 5) == hits
    store.close()
    store.close()  # idempotent
    with pytest.raises(CollectionNotReady, match="closed"):
        store.search_dense(list(points[3].dense), [], 5)
    with pytest.raises(CollectionNotReady, match="closed"):
        store.ensure_collection(spec())


def test_one_store_serves_one_collection(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as store:
        store.ensure_collection(spec())
        with pytest.raises(InvalidStoreInput, match="already serves collection 'chunks'"):
            store.ensure_collection(spec(name="other"))


def test_data_dir_layout(tmp_path: Path) -> None:
    with EdgeStore(tmp_path / "nested" / "dir") as store:
        store.ensure_collection(spec())
    root = tmp_path / "nested" / "dir" / "chunks"
    assert {p.name for p in root.iterdir()} == {".lock", "collection.json", "shard"}
    assert os.listdir(root / "shard")


def test_search_threads_reach_the_engine_and_leave_rankings_alone(tmp_path: Path) -> None:
    points = make_points(60)
    queries = [list(p.dense) for p in points[:5]]
    recorded = tmp_path / "chunks" / "shard" / "edge_config.json"
    with EdgeStore(tmp_path, flush_writes=False, search_threads=3) as pool:
        pool.ensure_collection(spec())
        pool.upsert(points)
        pool.optimize()
        expected = [[(h.id, h.score) for h in pool.search_dense(q, [], 10)] for q in queries]
    assert json.loads(recorded.read_text())["max_search_threads"] == 3
    with EdgeStore(tmp_path) as store:  # the default: search on the calling thread
        store.ensure_collection(spec())
        assert [[(h.id, h.score) for h in store.search_dense(q, [], 10)] for q in queries] == expected
    # Recorded on every open, so the setting of the running server is the one in force.
    assert json.loads(recorded.read_text())["max_search_threads"] == 1


def test_configured_payload_indexes_are_added_on_open_and_filters_agree(tmp_path: Path) -> None:
    from dataclasses import replace

    from freki.store import NumericRange

    points = make_points(40)
    flt = [FieldMatch("metadata.topics", ("diet",)), FieldMatch("metadata_num.page", (), range=NumericRange(lte=3))]
    with EdgeStore(tmp_path, flush_writes=False) as plain:
        plain.ensure_collection(spec())
        plain.upsert(points)
        expected = plain.count(flt)
    indexed = replace(spec(), keyword_indexes=("metadata.topics",), float_indexes=("metadata_num.page",))
    with EdgeStore(tmp_path, flush_writes=False) as store:  # an existing collection gains them on the next open
        store.ensure_collection(indexed)
        schema = store._require_shard().info().payload_schema
        assert {"metadata.topics", "metadata_num.page", "tenant_id"} <= set(schema)
        assert expected > 0 and store.count(flt) == expected
