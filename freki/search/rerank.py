"""Second-stage ordering of retrieved chunks: a cross-encoder re-ranker and MMR diversification.

* ``Reranker`` is the interface: score (query, passage) pairs with a relevance in [0, 1].
  ``CrossEncoderReranker`` implements it with a sentence-transformers ``CrossEncoder`` loaded from a
  local directory the operator configures (``FREKI_RETRIEVAL__RERANKER_MODEL``). No model hub is
  reachable at run time, so there is no default model: re-ranking is off unless configured.
* ``mmr_order`` is maximal marginal relevance (Carbonell & Goldstein, 1998): it needs no extra model,
  only the chunk embeddings already stored, and trades relevance for novelty so that near-duplicate
  chunks (overlapping windows, copied paragraphs) do not fill the top-k.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from wolf_service.errors import FailedPrecondition

log = logging.getLogger("freki.rerank")


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each passage answers the query."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Relevance of each passage to the query, in [0, 1], in the order given."""
        ...


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local directory; logits become probabilities.

    Thread-safe: scoring is serialised for the same reason embedding is (torch already uses every
    core for one batch).
    """

    def __init__(self, model_path: str | Path, *, device: str = "cpu", batch_size: int = 16,
                 max_length: int = 512) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        path = Path(model_path)
        if not path.is_dir():
            raise FailedPrecondition(
                f"reranker model {str(model_path)!r} is not a directory; set FREKI_RETRIEVAL__RERANKER_MODEL to a "
                "local sentence-transformers CrossEncoder directory, or unset it to disable re-ranking"
            )
        try:
            self._model = CrossEncoder(str(path), device=device, max_length=max_length)
        except Exception as exc:  # OSError, ValueError, HF errors: all mean "cannot load"
            raise FailedPrecondition(f"cannot load reranker model {str(model_path)!r}: {exc}") from exc
        self.name = str(path)
        self._batch_size = batch_size
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Sigmoid of the cross-encoder logit for each (query, passage) pair."""
        if not passages:
            return []
        with self._lock:
            logits = self._model.predict(
                [(query, p) for p in passages], batch_size=self._batch_size, show_progress_bar=False,
                convert_to_numpy=True,
            )
        flat = np.asarray(logits, dtype=np.float64).reshape(len(passages), -1)
        # Single-logit heads (ms-marco style) are relevance logits; multi-class heads: last class = relevant.
        return [_sigmoid(float(row[-1])) for row in flat]


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def mmr_order(relevance: Sequence[float], vectors: np.ndarray, k: int, diversity: float) -> list[int]:
    """Indices of ``k`` candidates chosen by maximal marginal relevance, in selection order.

    Each step picks ``argmax (1 - diversity) * relevance_i - diversity * max_j cos(v_i, v_j)`` over
    the not-yet-chosen candidates i, with j ranging over those already chosen. ``diversity`` 0
    keeps the relevance order; 1 ignores relevance after the first pick.

    Args:
        relevance: Relevance of each candidate in [0, 1].
        vectors: ``(n, dim)`` unit-length embeddings of the candidates, same order.
        k: How many to select.
        diversity: In [0, 1].
    """
    n = len(relevance)
    if vectors.shape[0] != n:
        raise ValueError(f"mmr needs one vector per candidate (got {vectors.shape[0]} for {n})")
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"mmr diversity must be in [0, 1] (got {diversity})")
    if n == 0 or k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    sims = np.asarray(vectors, dtype=np.float64) @ np.asarray(vectors, dtype=np.float64).T
    chosen: list[int] = []
    max_sim = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        objective = (1.0 - diversity) * rel - diversity * redundancy
        objective[~available] = -np.inf
        pick = int(np.argmax(objective))
        chosen.append(pick)
        available[pick] = False
        max_sim = np.maximum(max_sim, sims[pick])
    return chosen
