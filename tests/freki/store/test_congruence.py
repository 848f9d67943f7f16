"""Congruence suite: the same calls against EdgeStore (real Qdrant engine) and RemoteStore (qdrant-client
local mode) must give the same answers (the pattern of qdrant-client's ``tests/congruence_tests``)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from freki.store import (
    ChunkPoint,
    EdgeStore,
    EmbeddingModelMismatch,
    FieldMatch,
    NumericRange,
    PointNotFound,
    RemoteStore,
    ScoredPoint,
    SparseVector,
    StoredPoint,
)
from tests.freki.store.points_support import DIM, make_points, random_dense, random_sparse, spec

pytestmark = pytest.mark.integration

Pair = tuple[EdgeStore, RemoteStore]

FILTERS: list[list[FieldMatch]] = [
    [],
    [FieldMatch("tenant_id", ("acme",))],
    [FieldMatch("tenant_id", ("acme",)), FieldMatch("document_id", ("doc-1", "doc-3"))],
    [FieldMatch("metadata.lang", ("de",))],
    [FieldMatch("metadata.lang", ("de", "fr"), exclude=True)],
    [FieldMatch("tenant_id", ("globex",)), FieldMatch("source_type", ("pdf",), exclude=True)],
    [FieldMatch("chunk_index", (1, 2, 3, 40))],
    [FieldMatch("is_public", (True,))],
    [FieldMatch("is_public", (True, False))],
    [FieldMatch("owner_id", ("owner-1", 7))],  # mixed types: an OR of exact matches
    [FieldMatch("metadata.missing", ("x",), exclude=True)],
    [FieldMatch("tenant_id", ("nobody",))],
    [FieldMatch("metadata.topics", ("health",))],  # an element of a list
    [FieldMatch("metadata.topics", ("care", "diet"))],  # any of them
    [FieldMatch("metadata.topics", ("health", "diet"), match_all=True)],
    [FieldMatch("metadata.topics", ("health",), exclude=True)],
    # access groups (freki.store.access): the value, or no value at all (missing, null, empty list)
    [FieldMatch("metadata.topics", ("health",), or_empty=True)],
    [FieldMatch("metadata.topics", (), or_empty=True)],
    [FieldMatch("metadata_num.page", (), range=NumericRange(gte=2, lt=5))],
    [FieldMatch("metadata_num.page", (), range=NumericRange(gt=2), exclude=True)],
    [FieldMatch("metadata_num.ratings", (), range=NumericRange(lte=0.5))],  # any element in range
    [FieldMatch("chunk_index", (), range=NumericRange(gte=10.5, lte=20))],  # int payload, float bound
    [FieldMatch("metadata.source_type", ("docs",), fallback_key="source_type")],
    [FieldMatch("metadata.source_type", ("pdf",), fallback_key="source_type")],
    [FieldMatch("metadata.source_type", ("pdf",), fallback_key="source_type", exclude=True)],
]


def both(pair: Pair, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Call ``method`` with the same arguments on both engines."""
    edge, remote = pair
    return getattr(edge, method)(*args, **kwargs), getattr(remote, method)(*args, **kwargs)


def assert_same_hits(edge: list[ScoredPoint], remote: list[ScoredPoint], tol: float = 1e-4) -> None:
    """Same ids, same order, scores equal within float32 noise, same payloads."""
    assert [h.id for h in edge] == [h.id for h in remote]
    for e, r in zip(edge, remote, strict=True):
        assert math.isclose(e.score, r.score, rel_tol=tol, abs_tol=tol), (e, r)
        assert e.payload == r.payload


def assert_same_points(edge: list[StoredPoint], remote: list[StoredPoint]) -> None:
    assert [p.id for p in edge] == [p.id for p in remote]
    for e, r in zip(edge, remote, strict=True):
        assert e.payload == r.payload
        if e.dense is None or r.dense is None:
            assert e.dense is r.dense is None
        else:
            assert e.dense == pytest.approx(r.dense, abs=1e-6)


@pytest.fixture
def loaded(pair: Pair) -> tuple[Pair, list[ChunkPoint]]:
    points = make_points(60)
    both(pair, "upsert", points)
    return pair, points


def test_upsert_then_retrieve_returns_payload_and_unit_vectors(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    ids = [p.id for p in points[10:20]] + ["00000000-0000-4000-8000-000000000000"]
    edge, remote = both(pair, "retrieve", list(reversed(ids)), with_vectors=True)
    assert_same_points(edge, remote)
    assert [p.id for p in edge] == [p.id for p in reversed(points[10:20])]  # asked order, missing id dropped
    original = points[10]
    got = edge[-1]
    assert got.payload == original.payload
    norm = math.sqrt(sum(x * x for x in original.dense))
    assert got.dense == pytest.approx([x / norm for x in original.dense], abs=1e-5)  # stored normalised


def test_ids_are_returned_in_canonical_form(pair: Pair) -> None:
    point = make_points(1)[0]
    shouted = ChunkPoint(point.id.upper().replace("-", ""), point.dense, point.sparse, point.payload)
    both(pair, "upsert", [shouted])
    edge, remote = both(pair, "retrieve", [point.id.upper()])
    assert [p.id for p in edge] == [p.id for p in remote] == [point.id]


def _filter_id(flt: list[FieldMatch]) -> str:
    return " & ".join(f"{c.key}{'!=' if c.exclude else '='}{c.values}{c.range or ''}" for c in flt)


@pytest.mark.parametrize("flt", FILTERS, ids=_filter_id)
def test_count_and_scroll_agree_for_filter(loaded: tuple[Pair, list[ChunkPoint]], flt: list[FieldMatch]) -> None:
    pair, points = loaded
    edge_n, remote_n = both(pair, "count", flt)
    assert edge_n == remote_n == len([p for p in points if matches(p.payload, flt)])
    edge_page, remote_page = both(pair, "scroll", flt, 100)
    assert_same_points(edge_page[0], remote_page[0])
    assert edge_page[1] is None and remote_page[1] is None


def _value(payload: dict[str, Any], key: str) -> Any:
    value: Any = payload
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _holds(value: Any, cond: FieldMatch) -> bool:
    items = value if isinstance(value, list) else [] if value is None else [value]
    if cond.or_empty and not items:
        return True
    if cond.range is not None:
        r = cond.range
        return any(
            (r.gte is None or x >= r.gte) and (r.gt is None or x > r.gt)
            and (r.lte is None or x <= r.lte) and (r.lt is None or x < r.lt)
            for x in items
        )
    present = [any(type(x) is type(v) and x == v for x in items) for v in cond.values]
    return all(present) if cond.match_all else any(present)


def matches(payload: dict[str, Any], flt: list[FieldMatch]) -> bool:
    """Reference semantics of a filter, to check the engines against something independent."""
    for cond in flt:
        value = _value(payload, cond.key)
        if cond.fallback_key is not None and value in (None, []):
            value = _value(payload, cond.fallback_key)
        if _holds(value, cond) == cond.exclude:
            return False
    return True


def test_scroll_pages_cover_every_match_once_in_the_same_order(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    flt = [FieldMatch("tenant_id", ("acme",))]
    pages: dict[str, list[str]] = {}
    for store in pair:
        seen: list[str] = []
        offset = None
        while True:
            page, offset = store.scroll(flt, 7, offset=offset)
            assert len(page) <= 7
            seen.extend(p.id for p in page)
            if offset is None:
                break
        pages[store.backend] = seen
    expected = sorted(p.id for p in points if p.payload["tenant_id"] == "acme")
    assert pages["edge"] == pages["remote"] == expected


def test_delete_where_returns_matches_and_removes_only_them(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    flt = [FieldMatch("tenant_id", ("acme",)), FieldMatch("metadata.lang", ("en",))]
    expected = len([p for p in points if matches(p.payload, flt)])
    assert both(pair, "delete_where", flt) == (expected, expected)
    assert both(pair, "count", flt) == (0, 0)
    assert both(pair, "count", []) == (60 - expected, 60 - expected)
    assert both(pair, "delete_where", flt) == (0, 0)


def test_set_payload_merges_keys_and_refuses_missing_points(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    ids = [points[0].id, points[1].id]
    both(pair, "set_payload", ids, {"owner_id": "new-owner", "metadata": {"lang": "sv"}})
    edge, remote = both(pair, "retrieve", ids)
    assert_same_points(edge, remote)
    assert edge[0].payload["owner_id"] == "new-owner"
    assert edge[0].payload["metadata"] == {"lang": "sv"}  # nested dict replaced, not deep-merged
    assert edge[0].payload["chunk_hash"] == points[0].payload["chunk_hash"]  # other keys kept
    missing = "11111111-1111-4111-8111-111111111111"
    for store in pair:
        with pytest.raises(PointNotFound, match=missing):
            store.set_payload([points[2].id, missing], {"owner_id": "x"})
        assert store.retrieve([points[2].id])[0].payload["owner_id"] == points[2].payload["owner_id"]


def test_apply_replaces_a_document(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    doc = [FieldMatch("document_id", ("doc-2",))]
    old_ids = [p.id for p in points if p.payload["document_id"] == "doc-2"]
    new = make_points(4, seed=99, document_id="doc-2", tenant="acme")
    survivor = next(p.id for p in points if p.payload["document_id"] == "doc-0")
    both(pair, "apply", new, old_ids, [([new[0].id, survivor], {"owner_id": "moved"})])
    edge, remote = both(pair, "scroll", doc, 100)
    assert_same_points(edge[0], remote[0])
    assert sorted(p.id for p in edge[0]) == sorted(p.id for p in new)
    assert both(pair, "count", [FieldMatch("owner_id", ("moved",))]) == (2, 2)
    assert both(pair, "count", []) == (60 - len(old_ids) + 4,) * 2


def test_dense_search_ranks_the_same_and_honours_threshold(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    rng = random.Random(3)
    for flt in FILTERS[:6]:
        query = random_dense(rng)
        edge, remote = both(pair, "search_dense", query, flt, 10)
        assert_same_hits(edge, remote)
        assert all(matches(h.payload, flt) for h in edge)
        assert [h.score for h in edge] == sorted((h.score for h in edge), reverse=True)
        assert all(-1.0001 <= h.score <= 1.0001 for h in edge)
    exact = points[5]
    edge, remote = both(pair, "search_dense", list(exact.dense), [], 5, score_threshold=0.3)
    assert_same_hits(edge, remote)
    assert edge[0].id == exact.id and edge[0].score == pytest.approx(1.0, abs=1e-5)
    assert all(h.score >= 0.3 for h in edge)
    unthresholded, _ = both(pair, "search_dense", list(exact.dense), [], 60)
    assert len(edge) == min(5, len([h for h in unthresholded if h.score >= 0.3]))


def test_sparse_search_ranks_the_same(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, _ = loaded
    rng = random.Random(5)
    for flt in FILTERS[:4]:
        query = random_sparse(rng, terms=3)
        edge, remote = both(pair, "search_sparse", query, flt, 8)
        assert_same_hits(edge, remote)
        assert edge, "a 3-term query over a 40-term vocabulary must hit something"
        assert all(matches(h.payload, flt) for h in edge)
    assert both(pair, "search_sparse", SparseVector([], []), [], 5) == ([], [])


def test_hybrid_search_fuses_to_the_same_top_ids(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    rng = random.Random(11)
    for flt in FILTERS[:4]:
        edge, remote = both(pair, "search_hybrid", random_dense(rng), random_sparse(rng, terms=3), flt, 5, 20)
        assert_same_hits(edge, remote)  # same ids, order and RRF scores (rrf_k is passed to both)
        assert all(matches(h.payload, flt) for h in edge)
    target = points[8]
    edge, remote = both(pair, "search_hybrid", list(target.dense), target.sparse, [], 3, 10)
    assert edge[0].id == remote[0].id == target.id  # first in both rankings: the fused winner


def test_searches_without_payload_rank_the_same_and_carry_none(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    """Candidate lists for fusion skip payload loading; ids, order and scores must not change."""
    pair, _ = loaded
    rng = random.Random(13)
    flt = FILTERS[1]
    dense, sparse = random_dense(rng), random_sparse(rng, terms=3)
    calls: list[tuple[str, tuple[Any, ...]]] = [
        ("search_dense", (dense, flt, 10)),
        ("search_sparse", (sparse, flt, 10)),
        ("search_hybrid", (dense, sparse, flt, 10, 20)),
    ]
    for method, args in calls:
        full_edge, full_remote = both(pair, method, *args)
        bare_edge, bare_remote = both(pair, method, *args, with_payload=False)
        assert full_edge and all(h.payload for h in full_edge)
        for full, bare in ((full_edge, bare_edge), (full_remote, bare_remote)):
            # Equal scores (RRF ranks, shared sparse terms) may come back in either order, and a tie at
            # the cut may swap which point is included: compare scores in order, and ids above the cut.
            assert [h.score for h in bare] == pytest.approx([h.score for h in full], abs=1e-6), method
            cut = full[-1].score
            assert {h.id: h.score for h in bare if h.score > cut + 1e-6} == pytest.approx(
                {h.id: h.score for h in full if h.score > cut + 1e-6}, abs=1e-6), method
            assert all(h.payload == {} for h in bare), method


def test_tenant_filter_isolates_tenants_in_every_search(loaded: tuple[Pair, list[ChunkPoint]]) -> None:
    pair, points = loaded
    acme = [FieldMatch("tenant_id", ("acme",))]
    globex_point = next(p for p in points if p.payload["tenant_id"] == "globex")
    for store in pair:
        hits = store.search_dense(list(globex_point.dense), acme, 60)
        hits += store.search_sparse(globex_point.sparse or SparseVector([], []), acme, 60)
        hits += store.search_hybrid(list(globex_point.dense), globex_point.sparse or SparseVector([], []), acme, 60, 60)
        assert hits and {h.payload["tenant_id"] for h in hits} == {"acme"}
        assert globex_point.id not in {h.id for h in hits}


def test_model_mismatch_is_refused_with_both_model_names(pair: Pair) -> None:
    for store in pair:
        with pytest.raises(EmbeddingModelMismatch) as err:
            store.ensure_collection(spec(model="other-model"))
        assert "test-model-v1" in str(err.value) and "other-model" in str(err.value)
        assert "re-index" in str(err.value)
        with pytest.raises(EmbeddingModelMismatch, match="dim 32"):
            store.ensure_collection(spec(dim=32))
        store.ensure_collection(spec())  # the matching spec is still accepted
        assert store.count([]) == 0


def test_collection_without_sparse_vectors(tmp_path: Any) -> None:
    edge, remote = EdgeStore(tmp_path / "e"), RemoteStore(location=":memory:")
    try:
        for store in (edge, remote):
            store.ensure_collection(spec(name="dense_only", sparse=False))
            point = make_points(1)[0]
            store.upsert([ChunkPoint(point.id, point.dense, None, point.payload)])
            assert store.search_dense(list(point.dense), [], 1)[0].id == point.id
            with pytest.raises(ValueError, match="was created without one"):
                store.upsert([point])
            with pytest.raises(EmbeddingModelMismatch, match="sparse"):
                store.ensure_collection(spec(name="dense_only", sparse=True))
    finally:
        edge.close()
        remote.close()


def test_dim_is_checked_before_anything_is_written(pair: Pair) -> None:
    good = make_points(3)
    bad = ChunkPoint(good[2].id, [0.5] * (DIM - 1), None, {})
    for store in pair:
        with pytest.raises(ValueError, match=f"has {DIM - 1} dimensions, the collection expects {DIM}"):
            store.upsert([*good[:2], bad])
        assert store.count([]) == 0
