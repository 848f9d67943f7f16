"""``search_convex``: convex fusion inside the engine must rank and score as ``freki.search.fusion`` does over the
separate searches (with the exact cosine of every candidate), on both engines."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from freki.embed.calibration import Alignment
from freki.search import fusion
from freki.store import ChunkPoint, ConvexWeights, EdgeStore, FieldMatch, InvalidStoreInput, RemoteStore, SparseVector
from tests.freki.store.points_support import make_points, random_dense, random_sparse

pytestmark = pytest.mark.integration

Store = EdgeStore | RemoteStore
WEIGHTS = ConvexWeights(sparse_weight=0.4, sparse_half=6.0)


def reference(store: Store, dense: list[float], sparse: SparseVector, flt: list[FieldMatch], limit: int,
              prefetch: int, weights: ConvexWeights) -> list[fusion.Scored]:
    """What the retriever computed before fusion moved into the engine: both lists, exact cosines of all."""
    dense_hits = store.search_dense(dense, flt, prefetch, with_payload=False)
    sparse_hits = store.search_sparse(sparse, flt, prefetch, with_payload=False)
    norm = math.sqrt(sum(x * x for x in dense))
    union = list(dict.fromkeys([h.id for h in dense_hits] + [h.id for h in sparse_hits]))
    cosines = {p.id: sum(a * b for a, b in zip(p.dense or [], dense, strict=True)) / norm
               for p in store.retrieve(union, with_vectors=True)}
    lexical = {h.id: fusion.sparse_relevance(h.score, weights.sparse_half) for h in sparse_hits}
    align = Alignment(weights.cosine_scale, weights.cosine_shift)  # a type-specific model's cosines
    relevance = {i: fusion.dense_relevance(align(c)) for i, c in cosines.items()}
    return fusion.convex(relevance, lexical, weights.sparse_weight)[:limit]


@pytest.fixture
def loaded(pair: tuple[EdgeStore, RemoteStore]) -> tuple[tuple[EdgeStore, RemoteStore], list[ChunkPoint]]:
    points = make_points(80)
    for store in pair:
        store.upsert(points)
    return pair, points


# A model whose unrelated texts sit at cosine ~0.6, aligned onto the standard model's scale (freki.embed.calibration).
ALIGNED = ConvexWeights(sparse_weight=0.4, sparse_half=6.0, cosine_scale=2.5, cosine_shift=-1.5)


@pytest.mark.parametrize("weights", [WEIGHTS, ALIGNED], ids=["standard", "aligned"])
@pytest.mark.parametrize("flt", [[], [FieldMatch("tenant_id", ("acme",))]], ids=["all", "tenant"])
def test_engine_fusion_equals_fusion_of_the_separate_searches(loaded: Any, flt: list[FieldMatch],
                                                              weights: ConvexWeights) -> None:
    pair, _ = loaded
    rng = random.Random(21)
    for _ in range(8):
        dense, sparse = random_dense(rng), random_sparse(rng, terms=3)
        results = []
        for store in pair:
            got = store.search_convex(dense, sparse, flt, 6, 15, weights)
            want = reference(store, dense, sparse, flt, 6, 15, weights)
            assert [h.id for h in got] == [s.id for s in want], store.backend
            assert [h.score for h in got] == pytest.approx([s.score for s in want], abs=1e-5), store.backend
            assert got and all(h.payload for h in got)  # the fused top comes with payloads
            assert all(h.payload["tenant_id"] == "acme" for h in got) or not flt
            results.append(got)
        edge, remote = results
        assert [h.id for h in edge] == [h.id for h in remote]
        assert [h.payload for h in edge] == [h.payload for h in remote]


def test_a_lexical_only_candidate_is_scored_with_its_exact_cosine(loaded: Any) -> None:
    """A point found only by the sparse search: its cosine counts, not 0 (nor the dense list's lowest)."""
    pair, points = loaded
    rng = random.Random(4)
    target = points[17]
    assert target.sparse is not None
    dense = random_dense(rng)
    for store in pair:
        dense_ids = {h.id for h in store.search_dense(dense, [], 3, with_payload=False)}
        assert target.id not in dense_ids
        hits = {h.id: h.score for h in store.search_convex(dense, target.sparse, [], 80, 3, WEIGHTS)}
        want = {s.id: s.score for s in reference(store, dense, target.sparse, [], 80, 3, WEIGHTS)}
        assert hits[target.id] == pytest.approx(want[target.id], abs=1e-5)
        stored = store.retrieve([target.id], with_vectors=True)[0].dense or []
        norm = math.sqrt(sum(x * x for x in dense))
        cosine = sum(a * b for a, b in zip(stored, dense, strict=True)) / norm
        assert cosine > 0.05  # else the test would not tell an exact cosine from 0
        assert hits[target.id] >= (1 - WEIGHTS.sparse_weight) * cosine - 1e-5


def test_without_payload_the_same_ranking_carries_none(loaded: Any) -> None:
    pair, _ = loaded
    rng = random.Random(8)
    dense, sparse = random_dense(rng), random_sparse(rng, terms=3)
    for store in pair:
        full = store.search_convex(dense, sparse, [], 10, 20, WEIGHTS)
        bare = store.search_convex(dense, sparse, [], 10, 20, WEIGHTS, with_payload=False)
        assert [h.score for h in bare] == pytest.approx([h.score for h in full], abs=1e-6)
        assert all(h.payload == {} for h in bare)


def test_an_empty_sparse_query_ranks_by_dense_relevance_alone(loaded: Any) -> None:
    pair, _ = loaded
    dense = random_dense(random.Random(2))
    for store in pair:
        hits = store.search_convex(dense, SparseVector([], []), [], 5, 20, WEIGHTS)
        plain = store.search_dense(dense, [], 5)
        assert [h.id for h in hits] == [h.id for h in plain]
        assert [h.score for h in hits] == pytest.approx([0.6 * max(0.0, h.score) for h in plain], abs=1e-6)


def test_bad_weights_are_refused(loaded: Any) -> None:
    pair, _ = loaded
    bad = [(ConvexWeights(1.5, 8.0), "sparse_weight must be in"),
           (ConvexWeights(-0.1, 8.0), "sparse_weight must be in"),
           (ConvexWeights(0.4, 0.0), "sparse_half must be a positive"),
           (ConvexWeights(0.4, math.inf), "sparse_half must be a positive"),
           (ConvexWeights(0.4, 8.0, cosine_scale=0.0), "cosine_scale must be in"),
           (ConvexWeights(0.4, 8.0, cosine_scale=math.nan), "cosine_scale must be in"),
           (ConvexWeights(0.4, 8.0, cosine_shift=math.inf), "cosine_shift must be in")]
    for store in pair:
        for weights, message in bad:
            with pytest.raises(InvalidStoreInput, match=message):
                store.search_convex(random_dense(random.Random(1)), SparseVector([1], [1.0]), [], 5, 10, weights)
