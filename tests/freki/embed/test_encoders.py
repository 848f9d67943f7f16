"""The ONNX Runtime encoder against torch, with the real packaged MiniLM model.

The ONNX path is Freki's default on CPU, so these check what users get: the same vectors as
sentence-transformers' own encode (in the caller's order, whatever the batch split), one export
per model cached on disk, and a fall back to torch whenever ONNX cannot be trusted.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from freki.embed import bulk_choice, onnx_export, selection
from freki.embed.embedder import Embedder, resolve_model_path
from freki.embed.encoders import PER_TEXT_TOKENIZE_MAX, BatchedEncoder, Encoder, OnnxEncoder, TorchEncoder
from freki.embed.runners import BatchRunner, TorchRunner
from freki.embed.selection import build_encoder, probe_cosine

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
    return onnx_export.export_onnx(model, model_path, tmp_path_factory.mktemp("onnx-cache"))


def test_onnx_vectors_equal_torch_in_caller_order(model: SentenceTransformer, exported: Path) -> None:
    onnx = OnnxEncoder(exported, model.tokenizer, max_length=256)
    expected = TorchEncoder(model).encode(TEXTS, batch_size=32)
    # Batches of 3 split the length-sorted texts across passes; rows must come back in input order.
    got = onnx.encode(TEXTS, batch_size=3)
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(got * expected, axis=1)) > 0.9999


def test_small_batches_are_tokenised_text_by_text_exactly_like_the_batch_call(
    model: SentenceTransformer, exported: Path
) -> None:
    onnx = OnnxEncoder(exported, model.tokenizer, max_length=256)
    texts = [*TEXTS, "Ünïcödé – ‘quotes’ 😀", "tab\tand\nnewline", "word " * 600]
    assert len(texts) <= PER_TEXT_TOKENIZE_MAX
    expected = model.tokenizer(texts, truncation=True, max_length=256, padding=False)
    vectors = onnx.encode(texts, batch_size=32)

    def no_batch_call(*args: object, **kwargs: object) -> None:
        raise AssertionError("a small batch went through the batch tokenizer call")

    onnx._tokenizer = no_batch_call  # the per-text path must not need it
    got = onnx._tokenize(texts)
    for name in model.tokenizer.model_input_names:
        assert [list(ids) for ids in got[name]] == [list(ids) for ids in expected[name]], name
    assert max(len(ids) for ids in got["input_ids"]) == 256  # truncated to the window, like the batch call
    assert np.array_equal(onnx.encode(texts, batch_size=32), vectors)


def test_export_is_cached_and_reused(model: SentenceTransformer, model_path: str, exported: Path) -> None:
    before = exported.stat().st_mtime_ns
    again = onnx_export.export_onnx(model, model_path, exported.parent.parent)
    assert again == exported and again.stat().st_mtime_ns == before
    assert [p.name for p in exported.parent.iterdir()] == [exported.name]  # no temp files left behind


def test_embedder_defaults_to_onnx_and_torch_is_selectable(embedder: Embedder, model: SentenceTransformer) -> None:
    assert embedder.backend in {"onnx", "onnx+torch-fp32", "onnx+bf16"}
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
    monkeypatch.setattr(selection, "probe_cosine", lambda reference, candidate: 0.93)
    with caplog.at_level(logging.WARNING, logger="freki.encoders"):
        chosen = build_encoder(model, backend="onnx", device="cpu", model_path=model_path,
                               cache_dir=exported.parent.parent, max_length=256)
    assert chosen.name == "torch"
    assert "ONNX embedding differs from torch" in caplog.text


def test_probe_cosine_detects_a_different_model(model: SentenceTransformer, exported: Path) -> None:
    class Shuffled:
        """The right model with its vector components permuted: unit length, wrong direction."""

        name = "shuffled"

        def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
            return TorchEncoder(model).encode(texts, batch_size)[:, ::-1].copy()

    assert probe_cosine(TorchEncoder(model), OnnxEncoder(exported, model.tokenizer, 256)) > 0.9999
    assert probe_cosine(TorchEncoder(model), Shuffled()) < 0.5


# ------------------------------------------------------------------------------- runners for indexing batches
@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_torch_runner_matches_fp32_in_caller_order(model: SentenceTransformer, bf16: bool) -> None:
    runner = TorchRunner(model, workers=2, bf16=bf16)  # 2 workers: batches are cut into row slices
    expected = TorchEncoder(model).encode(TEXTS * 5, batch_size=32)
    got = BatchedEncoder(model.tokenizer, 256, runner).encode(TEXTS * 5, batch_size=7)
    assert got.dtype == np.float32 and got.shape == expected.shape
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    # Measured 0.99997 for bf16 and 1.0 for fp32; the bar is 0.99.
    assert np.min(np.sum(got * expected, axis=1)) > (0.999 if bf16 else 0.99999)


def test_torch_runner_handles_a_batch_smaller_than_its_workers(model: SentenceTransformer) -> None:
    runner = TorchRunner(model, workers=4)
    got = BatchedEncoder(model.tokenizer, 256, runner).encode(["one text only"], batch_size=32)
    expected = TorchEncoder(model).encode(["one text only"], batch_size=1)
    assert got.shape == (1, 384) and float(got[0] @ expected[0]) > 0.9999


def recording(runner: BatchRunner, calls: list[str]) -> None:
    run = runner.run

    def wrapped(feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
        calls.append(runner.name)
        return run(feeds)

    runner.run = wrapped  # type: ignore[method-assign]


def test_embedder_routes_large_batches_to_the_bulk_runner_and_queries_to_onnx() -> None:
    chosen = Embedder("all-MiniLM-L6-v2", bulk_runner="torch-fp32")
    assert chosen.backend == "onnx+torch-fp32"
    encoder = chosen._encoder
    assert isinstance(encoder, BatchedEncoder) and encoder.bulk is not None
    calls: list[str] = []
    recording(encoder.runner, calls)
    recording(encoder.bulk, calls)
    chosen.embed_query("which port does the relay listen on")
    assert calls == ["onnx"]
    calls.clear()
    chosen.embed([f"Sentence number {i} of a document that is being indexed right now." for i in range(32)])
    assert calls == ["torch-fp32"]
    assert Embedder("all-MiniLM-L6-v2", bulk_runner="onnx").backend == "onnx"


def private_cache(exported: Path, tmp_path: Path) -> Path:
    """A cache directory holding the export but no remembered runner choice."""
    (tmp_path / "onnx").mkdir()
    shutil.copy(exported, tmp_path / "onnx" / exported.name)
    return tmp_path


def test_auto_times_the_runners_once_per_machine_and_remembers(
    model: SentenceTransformer, model_path: str, exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = private_cache(exported, tmp_path)

    def build() -> str:
        return build_encoder(model, backend="onnx", device="cpu", model_path=model_path, cache_dir=cache,
                             max_length=256).name

    with caplog.at_level(logging.INFO, logger="freki.encoders"):
        first = build()
    assert "fastest on this machine (onnx " in caplog.text and "torch-fp32 " in caplog.text
    [remembered] = (cache / "bulk-runner").iterdir()
    record = json.loads(remembered.read_text())
    assert first == ("onnx" if record["chosen"] == "onnx" else f"onnx+{record['chosen']}")
    assert record["ms"][record["chosen"]] == min(record["ms"].values())
    # The next start on this machine trusts the record: no timing, and the loser is not even built.
    monkeypatch.setattr(bulk_choice, "measure", lambda *args: pytest.fail("measured again"))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="freki.encoders"):
        assert build() == first
    assert "measured on this machine before" in caplog.text


def test_the_fastest_runner_wins(model: SentenceTransformer, tmp_path: Path) -> None:
    """Timing at the seam: two runners that only differ in speed."""

    class Sleepy:
        parallel_rows = 1

        def __init__(self, name: str, seconds: float) -> None:
            self.name, self.seconds = name, seconds

        def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
            time.sleep(self.seconds)
            return [np.zeros((len(f["input_ids"]), 384), dtype=np.float32) for f in feeds]

    runners: dict[str, BatchRunner] = {"onnx": Sleepy("onnx", 0.03), "torch-fp32": Sleepy("torch-fp32", 0.001)}
    assert bulk_choice.measure(runners, model.tokenizer, tmp_path, "some-model") == "torch-fp32"
    runners = {"onnx": Sleepy("onnx", 0.001), "torch-fp32": Sleepy("torch-fp32", 0.03)}
    assert bulk_choice.measure(runners, model.tokenizer, tmp_path / "other", "some-model") == "onnx"


def test_bf16_is_left_out_without_native_support_or_when_it_disagrees(
    model: SentenceTransformer, model_path: str, exported: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(bulk_choice, "recall", lambda *args: None)
    monkeypatch.setattr(bulk_choice, "measure", lambda runners, *args: max(runners))  # "torch-fp32" > "onnx"

    def build() -> str:
        return build_encoder(model, backend="onnx", device="cpu", model_path=model_path,
                             cache_dir=exported.parent.parent, max_length=256).name

    monkeypatch.setattr(selection, "native_bf16", lambda: False)
    with caplog.at_level(logging.INFO, logger="freki.encoders"):
        assert build() == "onnx+torch-fp32"
    assert "no native bf16" in caplog.text
    # A bf16 result that disagrees with fp32: simulated at the probe seam (the real probe runs above).
    monkeypatch.setattr(selection, "native_bf16", lambda: True)
    real_probe = selection.probe_cosine

    def probe(reference: Encoder, candidate: Encoder) -> float:
        bf16 = isinstance(candidate, BatchedEncoder) and candidate.runner.name == "bf16"
        return 0.95 if bf16 else real_probe(reference, candidate)

    monkeypatch.setattr(selection, "probe_cosine", probe)
    with caplog.at_level(logging.WARNING, logger="freki.encoders"):
        assert build() == "onnx+torch-fp32"
    assert "bf16 embedding for indexing batches differs from torch fp32" in caplog.text
