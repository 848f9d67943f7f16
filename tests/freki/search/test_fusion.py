"""Unit tests of score calibration, fusion and score thresholds."""

from __future__ import annotations

import pytest

from freki.search import fusion


def test_relevance_transforms_stay_in_unit_interval() -> None:
    assert fusion.dense_relevance(-0.3) == 0.0 and fusion.dense_relevance(1.2) == 1.0
    assert fusion.sparse_relevance(0.0, 8.0) == 0.0
    assert fusion.sparse_relevance(8.0, 8.0) == pytest.approx(0.5)
    assert 0.99 < fusion.sparse_relevance(5000.0, 8.0) < 1.0


def test_sparse_relevance_round_trips() -> None:
    assert fusion.bm25_from_relevance(fusion.sparse_relevance(13.5, 8.0), 8.0) == pytest.approx(13.5)


def test_rrf_first_everywhere_scores_one_and_agreement_wins() -> None:
    fused = fusion.rrf([["a", "b", "c"], ["a", "c", "b"]], k=60)
    assert fused[0].id == "a" and fused[0].score == pytest.approx(1.0)
    assert all(0.0 < s.score <= 1.0 for s in fused)


def test_rrf_weights_favour_the_heavier_list() -> None:
    fused = fusion.rrf([["a", "b"], ["b", "a"]], k=60, weights=[1.0, 3.0])
    assert fused[0].id == "b"


def test_rrf_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="one weight per list"):
        fusion.rrf([["a"]], weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="k must be"):
        fusion.rrf([["a"]], k=0)


def test_weak_lexical_evidence_does_not_override_strong_dense() -> None:
    # The paraphrase case: BM25 matched only a common word in "b" (tiny score), nothing in "a".
    dense = {"a": 0.62, "b": 0.35}
    sparse = {"b": fusion.sparse_relevance(0.4, 8.0)}
    assert fusion.convex(dense, sparse, 0.3)[0].id == "a"
    # Rank-only fusion cannot tell: "b" is in both lists, so RRF puts it first.
    assert fusion.rrf([["a", "b"], ["b"]])[0].id == "b"


def test_strong_exact_match_lifts_a_lexical_hit() -> None:
    # The error-code case: dense prefers a look-alike, BM25 has a large score on the rare code.
    dense = {"lookalike": 0.55, "exact": 0.45}
    sparse = {"exact": fusion.sparse_relevance(25.0, 8.0)}
    assert fusion.convex(dense, sparse, 0.3)[0].id == "exact"


def test_convex_scores_are_weighted_means() -> None:
    fused = {s.id: s.score for s in fusion.convex({"a": 0.5}, {"a": 1.0, "b": 0.5}, 0.25)}
    assert fused["a"] == pytest.approx(0.75 * 0.5 + 0.25 * 1.0)
    assert fused["b"] == pytest.approx(0.25 * 0.5)
    with pytest.raises(ValueError):
        fusion.convex({}, {}, 1.5)


def test_mean_relevance_rewards_agreement_between_variants() -> None:
    one = [fusion.Scored("a", 0.9), fusion.Scored("b", 0.6)]
    two = [fusion.Scored("b", 0.6)]
    fused = fusion.mean_relevance([one, two])
    assert [s.id for s in fused] == ["b", "a"]
    assert fused[0].score == pytest.approx(0.6) and fused[1].score == pytest.approx(0.45)


def test_ties_are_broken_by_id_for_determinism() -> None:
    assert [s.id for s in fusion.sort_scored([fusion.Scored("b", 0.5), fusion.Scored("a", 0.5)])] == ["a", "b"]
