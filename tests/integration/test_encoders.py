"""The ONNX Runtime encoder against torch, with the real packaged MiniLM model.

The ONNX path is Freki's default on CPU, so these check what users get: the same vectors as
sentence-transformers' own encode (in the caller's order, whatever the batch split), one export
per model cached on disk, and a fall back to torch whenever ONNX cannot be trusted.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from freki import encoders
from freki.embedding import Embedder, resolve_model_path
from freki.encoders import OnnxEncoder, TorchEncoder, build_encoder, probe_cosine

pytestmark = pytest.mark.integration

TEXTS = [
    "short",
    "Qdrant stores dense and sparse vectors in one collection.",
    "ERR-5521",
    "A much longer passage " + "about retrieval augmented generation and its many moving parts " * 30,
    "Wie viele Kerne hat diese Maschine?",
    "",
    "The relay listens on port 9427 for admin requests.",
]


@pytest.fixture(scope="module")
def model_path() -> str:
    return resolve_model_path("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def model(model_path: str) -> SentenceTransformer:
    return SentenceTransformer(model_path, device="cpu")


@pytest.fixture(scope="module")
def exported(model: SentenceTransformer, model_path: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return encoders.export_onnx(model, model_path, tmp_path_factory.mktemp("onnx-cache"))


def test_onnx_vectors_equal_torch_in_caller_order(model: SentenceTransformer, exported: Path) -> None:
    onnx = OnnxEncoder(exported, model.tokenizer, max_length=256)
    expected = TorchEncoder(model).encode(TEXTS, batch_size=32)
    # Batches of 3 split the length-sorted texts across passes; rows must come back in input order.
    got = onnx.encode(TEXTS, batch_size=3)
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(got * expected, axis=1)) > 0.9999


def test_export_is_cached_and_reused(model: SentenceTransformer, model_path: str, exported: Path) -> None:
    before = exported.stat().st_mtime_ns
    again = encoders.export_onnx(model, model_path, exported.parent.parent)
    assert again == exported and again.stat().st_mtime_ns == before
    assert [p.name for p in exported.parent.iterdir()] == [exported.name]  # no temp files left behind


def test_embedder_defaults_to_onnx_and_torch_is_selectable(embedder: Embedder, model: SentenceTransformer) -> None:
    assert embedder.backend == "onnx"
    torch_embedder = Embedder("all-MiniLM-L6-v2", backend="torch")
    assert torch_embedder.backend == "torch"
    assert np.min(np.sum(embedder.embed(TEXTS) * torch_embedder.embed(TEXTS), axis=1)) > 0.9999


def test_unwritable_cache_falls_back_to_torch(
    model: SentenceTransformer, model_path: str, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    with caplog.at_level(logging.WARNING, logger="freki.encoders"):
        chosen = build_encoder(model, backend="onnx", device="cpu", model_path=model_path,
                               cache_dir=blocker, max_length=256)
    assert chosen.name == "torch"
    assert "ONNX embedding unavailable" in caplog.text


def test_onnx_that_disagrees_with_torch_is_not_used(
    model: SentenceTransformer, model_path: str, exported: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A stale or broken export: simulated at the probe seam, the real check runs in the tests above.
    monkeypatch.setattr(encoders, "probe_cosine", lambda reference, candidate: 0.93)
    with caplog.at_level(logging.WARNING, logger="freki.encoders"):
        chosen = build_encoder(model, backend="onnx", device="cpu", model_path=model_path,
                               cache_dir=exported.parent.parent, max_length=256)
    assert chosen.name == "torch"
    assert "differ from torch" in caplog.text


def test_probe_cosine_detects_a_different_model(model: SentenceTransformer, exported: Path) -> None:
    class Shuffled:
        """The right model with its vector components permuted: unit length, wrong direction."""

        name = "shuffled"

        def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
            return TorchEncoder(model).encode(texts, batch_size)[:, ::-1].copy()

    assert probe_cosine(TorchEncoder(model), OnnxEncoder(exported, model.tokenizer, 256)) > 0.9999
    assert probe_cosine(TorchEncoder(model), Shuffled()) < 0.5
