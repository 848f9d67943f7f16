"""Bad input is refused before any engine is touched, with a message naming what was wrong."""

from __future__ import annotations

import math
from typing import Any

import pytest

from freki.store import (
    ChunkPoint,
    FieldMatch,
    InvalidStoreInput,
    SparseVector,
    StoreConfig,
    make_store,
)
from freki.store.guarded import GuardedStore
from freki.store.validation import check_filter, check_payload, check_points, check_spec
from tests.freki.store.points_support import DIM, make_points, spec

ID = "0b5e2f2a-8f1e-4c1e-9a51-3f0d7c1a9b10"


def point(**changes: Any) -> ChunkPoint:
    base = {"id": ID, "dense": [0.5] * DIM, "sparse": SparseVector([1, 2], [0.5, 0.25]), "payload": {"a": 1}}
    base.update(changes)
    return ChunkPoint(**base)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (point(id="chunk-1"), "point id must be a UUID string \\(got 'chunk-1'\\)"),
        (point(dense=[0.5] * (DIM + 1)), f"has {DIM + 1} dimensions, the collection expects {DIM}"),
        (point(dense=[math.nan] + [0.5] * (DIM - 1)), "NaN or infinity"),
        (point(dense=[0.0] * DIM), "all zeros"),
        (point(sparse=SparseVector([1, 2], [0.5])), "has 2 indices but 1 values"),
        (point(sparse=SparseVector([3, 3], [0.5, 0.5])), "duplicate indices"),
        (point(sparse=SparseVector([-1], [0.5])), "index -1 is not an integer"),
        (point(payload={"tags": {"x"}}), "unsupported type set"),
        (point(payload={"metadata": {"lang": {"deep": "x"}}}), "metadata.lang"),
        (point(payload={"score": math.inf}), "NaN or infinity"),
        (point(payload={"n": 2**70}), "outside the 64-bit range"),
        (point(payload={"": 1}), "non-empty strings"),
    ],
)
def test_bad_points_are_refused_with_a_precise_message(bad: ChunkPoint, message: str) -> None:
    with pytest.raises(InvalidStoreInput, match=message):
        check_points([make_points(1)[0], bad], spec())


def test_duplicate_ids_in_one_batch_are_refused() -> None:
    with pytest.raises(InvalidStoreInput, match=f"{ID} appears twice"):
        check_points([point(), point(id=ID.upper())], spec())


def test_valid_payload_shapes_pass() -> None:
    payload = {
        "s": "x",
        "i": 3,
        "f": 0.5,
        "b": True,
        "tags": ["a", "b"],
        "metadata": {"lang": "en", "page": 2},
    }
    assert check_payload(payload) is payload


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ([FieldMatch("tenant_id", ())], "has no values"),
        ([FieldMatch("", ("x",))], "non-empty"),
        ([FieldMatch("metadata.", ("x",))], "dotted"),
        ([FieldMatch("score", (0.5,))], "only str, int and bool"),
        (FieldMatch("tenant_id", ("x",)), "wrap a single one in a list"),
        (["tenant_id"], "must be FieldMatch"),
    ],
)
def test_bad_filters_are_refused(flt: Any, message: str) -> None:
    with pytest.raises(InvalidStoreInput, match=message):
        check_filter(flt)


@pytest.mark.parametrize(
    ("name", "dim", "model", "message"),
    [
        ("../etc", 8, "m", "collection name must be"),
        ("", 8, "m", "collection name must be"),
        ("ok", 0, "m", "dense_dim must be a positive integer"),
        ("ok", 8, " ", "embedding_model must be a non-empty string"),
    ],
)
def test_bad_collection_specs_are_refused(name: str, dim: int, model: str, message: str) -> None:
    with pytest.raises(InvalidStoreInput, match=message):
        check_spec(spec(name=name, dim=dim, model=model))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (StoreConfig(backend="edge"), "needs data_dir"),
        (StoreConfig(backend="edge", data_dir="/tmp/x", url="http://q:6333"), "remote-store settings"),
        (StoreConfig(backend="remote"), "exactly one of url"),
        (StoreConfig(backend="remote", url="http://q:6333", location=":memory:"), "exactly one of url"),
        (StoreConfig(backend="remote", url="http://q:6333", timeout_s=0), "timeout_s must be positive"),
        (StoreConfig(backend="qdrant"), "unknown store backend 'qdrant'"),  # type: ignore[arg-type]
        (StoreConfig(data_dir="/tmp/x", rrf_k=0), "rrf_k must be a positive integer"),
        (StoreConfig(data_dir="/tmp/x", search_threads=0), "search_threads must be a positive integer \\(got 0\\)"),
        (StoreConfig(data_dir="/tmp/x", search_threads=True), "search_threads must be a positive integer"),
    ],
)
def test_make_store_refuses_incomplete_config(config: StoreConfig, message: str) -> None:
    with pytest.raises(InvalidStoreInput, match=message):
        make_store(config)


@pytest.mark.integration
def test_store_level_refusals_leave_the_index_unchanged(store: GuardedStore) -> None:
    points = make_points(6)
    store.upsert(points)
    with pytest.raises(InvalidStoreInput, match="both written and deleted"):
        store.apply([points[0]], [points[0].id], [])
    with pytest.raises(InvalidStoreInput, match="delete_where needs at least one condition"):
        store.delete_where([])
    with pytest.raises(InvalidStoreInput, match="limit must be a positive integer \\(got 0\\)"):
        store.search_dense(list(points[0].dense), [], 0)
    with pytest.raises(InvalidStoreInput, match="query vector has 3 dimensions"):
        store.search_hybrid([1.0, 2.0, 3.0], SparseVector([1], [1.0]), [], 5, 10)
    with pytest.raises(InvalidStoreInput, match="must be an \\(ids, payload\\) pair"):
        store.apply([], [], [([points[1].id],)])  # type: ignore[list-item]
    with pytest.raises(InvalidStoreInput, match="single string"):
        store.delete_ids(points[0].id)
    assert store.count([]) == 6
    assert store.retrieve([points[0].id])[0].payload == points[0].payload


def test_make_store_builds_the_named_backend(tmp_path: Any) -> None:
    edge = make_store(StoreConfig(backend="edge", data_dir=tmp_path))
    remote = make_store(StoreConfig(backend="remote", location=":memory:"))
    try:
        assert (edge.backend, remote.backend) == ("edge", "remote")
        assert edge.collection is None and remote.collection is None
    finally:
        edge.close()
        remote.close()


def test_freki_settings_set_the_edge_search_threads(tmp_path: Any) -> None:
    from pydantic import ValidationError

    from freki.engine import store_config
    from freki.settings import FrekiSettings

    assert store_config(FrekiSettings(data_dir=tmp_path)).search_threads == 1
    assert store_config(FrekiSettings(data_dir=tmp_path, store={"search_threads": 4})).search_threads == 4
    with pytest.raises(ValidationError, match="search_threads"):
        FrekiSettings(data_dir=tmp_path, store={"search_threads": 0})
