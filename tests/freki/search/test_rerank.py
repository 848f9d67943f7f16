"""MMR selection (unit) and the CrossEncoder re-ranker plumbing (integration, real model files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from freki.search.rerank import CrossEncoderReranker, Reranker, mmr_order
from wolf_service.errors import FailedPrecondition


def unit(*rows: list[float]) -> np.ndarray:
    m = np.asarray(rows, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_mmr_without_diversity_keeps_relevance_order() -> None:
    vectors = unit([1, 0], [1, 0.01], [0, 1])
    assert mmr_order([0.9, 0.8, 0.7], vectors, 3, 0.0) == [0, 1, 2]


def test_mmr_demotes_a_near_duplicate() -> None:
    vectors = unit([1, 0], [1, 0.01], [0, 1])  # 1 duplicates 0; 2 is different but less relevant
    assert mmr_order([0.9, 0.85, 0.6], vectors, 2, 0.5) == [0, 2]


def test_mmr_validates_inputs() -> None:
    with pytest.raises(ValueError, match="one vector per candidate"):
        mmr_order([0.5, 0.4], unit([1, 0]), 1, 0.5)
    with pytest.raises(ValueError, match="diversity"):
        mmr_order([0.5], unit([1, 0]), 1, 1.5)
    assert mmr_order([], np.zeros((0, 2)), 3, 0.5) == []


def test_missing_reranker_directory_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition, match="RERANKER_MODEL"):
        CrossEncoderReranker(tmp_path / "nope")


@pytest.mark.integration
def test_cross_encoder_reranker_scores_pairs_in_unit_interval(minilm_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(minilm_cross_encoder)
    assert isinstance(reranker, Reranker)
    passages = ["The pump overheats when the filter clogs.", "Bananas are yellow.", "Replace the filter."]
    scores = reranker.score("why does the pump overheat", passages)
    assert len(scores) == 3 and all(0.0 < s < 1.0 for s in scores)
    assert reranker.score("q", []) == []
    # Deterministic: the same pairs give the same scores (no dropout at inference).
    assert reranker.score("why does the pump overheat", passages) == pytest.approx(scores)
