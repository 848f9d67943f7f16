"""The ONNX Runtime encoder against torch, with the real packaged MiniLM model.

The ONNX path is Freki's default on CPU, so these check what users get: the same vectors as
sentence-transformers' own encode (in the caller's order, whatever the batch split), one export
per model cached on disk, and a fall back to torch whenever ONNX cannot be trusted.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
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


BF16_UNDER_A_THREAD_LIMIT = """
import numpy as np
from sentence_transformers import SentenceTransformer
from freki.embed.embedder import resolve_model_path
from freki.embed.encoders import BatchedEncoder, TorchEncoder
from freki.embed.runners import TorchRunner
texts = ["the heron nests in the reed bed beside the mill"] * 40
model = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")
runner = TorchRunner(model, workers=1, bf16=True, cores=2)
got = BatchedEncoder(model.tokenizer, 256, runner).encode(texts, batch_size=40)
expected = TorchEncoder(model).encode(texts, batch_size=40)
print(float(np.min(np.sum(np.nan_to_num(got) * expected, axis=1))))
"""


@pytest.mark.skipif(not selection.native_bf16(), reason="bf16 runs only where the CPU has native bf16")
def test_a_bf16_worker_keeps_within_the_openmp_thread_limit() -> None:
    # A bf16 matmul planned for two threads where OpenMP may start one leaves half its columns unwritten.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    done = subprocess.run([sys.executable, "-c", BF16_UNDER_A_THREAD_LIMIT], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    assert float(done.stdout.split()[-1]) > 0.999


QUERIES = [  # SciFact-like claims, 10-40 word-pieces
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "Vitamin D deficiency is unrelated to birth weight.",
    "A high microerythrocyte count raises vulnerability to severe anemia in homozygous alpha (+)- thalassemia "
    "trait subjects.",
    "Taking anti-depressants is associated with a decrease in the risk of stroke.",
    "Smoking increases the risk of lung cancer.",
    "The relay listens on port 9427 for admin requests, and its TLS certificate is renewed every 90 days.",
    "Macrolides protect against myocardial infarction.",
] * 2


def test_a_query_pass_on_the_bulk_runner_agrees_with_fp32(model: SentenceTransformer, exported: Path) -> None:
    """A pass of 16 short queries shares length batches within PAD_SLACK and runs on the bulk runner (bf16
    where native, else traced fp32), with vectors within the probe's bar of torch fp32."""
    from freki.embed.encoders import PAD_SLACK
    from freki.embed.runners import OnnxRunner

    bulk = TorchRunner(model, workers=2, bf16=selection.native_bf16())
    encoder = BatchedEncoder(model.tokenizer, 256, OnnxRunner(exported), bulk=bulk, bulk_min_tokens=64,
                             pad_slack=PAD_SLACK)
    calls: list[str] = []
    recording(encoder.runner, calls)
    recording(bulk, calls)
    got = encoder.encode(QUERIES, batch_size=64)
    assert calls == [bulk.name]
    expected = TorchEncoder(model).encode(QUERIES, batch_size=64)
    assert np.min(np.sum(got * expected, axis=1)) > 0.999  # bf16 measured 0.9999+; the probe's bar is 0.99
    calls.clear()
    encoder.encode(QUERIES[:1], batch_size=64)  # a lone query stays on fp32 ONNX
    assert calls == ["onnx"]


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
    queries = chosen._query_encoder  # the query lane: an fp32 ONNX session of its own (freki.embed.scheduling)
    assert isinstance(queries, BatchedEncoder) and queries.bulk is None
    recording(queries.runner, calls)
    chosen.embed_query("which port does the relay listen on")
    assert calls == ["onnx"]
    calls.clear()
    # Chunk-sized texts: 8 x ~150 tokens is above any crossover bulk_choice.min_tokens can measure (<= 1024).
    chosen.embed([f"Chunk number {i} of a document that is being indexed right now. " * 10 for i in range(8)])
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
    if record["chosen"] != "onnx":  # and from how many tokens it pays, remembered with the choice
        assert record["min_tokens"][record["chosen"]] in (64, 128, 256, 512, 1024)
    # The next start on this machine trusts the record: no timing, and the loser is not even built.
    monkeypatch.setattr(bulk_choice, "measure", lambda *args: pytest.fail("measured again"))
    monkeypatch.setattr(bulk_choice, "_cpu_per_row", lambda *args: pytest.fail("crossover measured again"))
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


def burn(seconds: float) -> None:
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass


class CpuCost:
    """A runner that burns CPU: ``per_batch`` seconds per call plus ``per_row`` per row."""

    parallel_rows = 1

    def __init__(self, name: str, per_batch: float, per_row: float) -> None:
        self.name, self.per_batch, self.per_row = name, per_batch, per_row

    def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
        burn(sum(self.per_batch + self.per_row * len(f["input_ids"]) for f in feeds))
        return [np.zeros((len(f["input_ids"]), 384), dtype=np.float32) for f in feeds]


def test_the_crossover_is_measured_in_cpu_and_remembered(
    model: SentenceTransformer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the seam: a bulk runner with a fixed cost per batch pays from 8 rows (3 ms / 8 < 0.5 ms a row)."""
    onnx, bulk = CpuCost("onnx", 0.0, 0.0005), CpuCost("bf16", 0.003, 0.0)
    assert bulk_choice.min_tokens(onnx, bulk, model.tokenizer, tmp_path, "some-model") == 8 * 32
    [path] = (tmp_path / "bulk-runner").iterdir()
    assert json.loads(path.read_text())["min_tokens"] == {"bf16": 256}
    # Remembered: the next start does not measure; another runner is measured, and never pays here.
    monkeypatch.setattr(bulk_choice, "_cpu_per_row", lambda *args: pytest.fail("measured again"))
    assert bulk_choice.min_tokens(onnx, bulk, model.tokenizer, tmp_path, "some-model") == 256
    monkeypatch.undo()
    slow = CpuCost("torch-fp32", 0.0, 0.001)
    never = min(rows * width for rows, width in bulk_choice.SHAPES)
    assert bulk_choice.min_tokens(onnx, slow, model.tokenizer, tmp_path, "some-model") == never
    assert json.loads(path.read_text())["min_tokens"] == {"bf16": 256, "torch-fp32": never}
    # A record no measurement could have written (a bool, a negative, a huge or odd figure) is measured again.
    for tampered in (True, -5, 10**22, 300):
        path.write_text(json.dumps({"min_tokens": {"bf16": tampered}}))
        assert bulk_choice.min_tokens(onnx, bulk, model.tokenizer, tmp_path, "some-model") == 256


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
