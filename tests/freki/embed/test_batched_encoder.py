"""Routing in BatchedEncoder: which runner gets which batch, and rows come back in the caller's order.

Fake runners at the runner seam; tests/freki/embed/test_encoders.py runs the real ONNX and bf16 runners.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from freki.embed.encoders import BatchedEncoder


class WordTokenizer:
    """One token per word plus [CLS]/[SEP], like a BERT tokenizer's shape (ids are word lengths)."""

    model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    pad_token_id = 0

    def __call__(self, texts: list[str], *, truncation: bool, max_length: int, padding: bool) -> dict[str, Any]:
        ids = [[101, *[len(w) for w in t.split()][: max_length - 2], 102] for t in texts]
        return {"input_ids": ids, "token_type_ids": [[0] * len(i) for i in ids],
                "attention_mask": [[1] * len(i) for i in ids]}


class RecordingRunner:
    """Returns, per row, [number of real tokens, 0, ...] so the caller's order can be checked."""

    def __init__(self, name: str, parallel_rows: int = 1) -> None:
        self.name = name
        self.parallel_rows = parallel_rows
        self.shapes: list[tuple[int, int]] = []

    def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
        out = []
        for feed in feeds:
            self.shapes.append(feed["input_ids"].shape)
            vectors = np.zeros((len(feed["input_ids"]), 4), dtype=np.float32)
            vectors[:, 0] = feed["attention_mask"].sum(axis=1)
            out.append(vectors)
        return out


def encoder(bulk_min_tokens: int = 256, pad_slack: int = 0,
            parallel_rows: int = 2) -> tuple[BatchedEncoder, RecordingRunner, RecordingRunner]:
    small, bulk = RecordingRunner("fp32"), RecordingRunner("bulk", parallel_rows=parallel_rows)
    return (BatchedEncoder(WordTokenizer(), 256, small, bulk=bulk, bulk_min_tokens=bulk_min_tokens,
                           pad_slack=pad_slack), small, bulk)


def words(n: int) -> str:
    return " ".join(["w"] * n)  # n + 2 tokens


def test_short_texts_within_the_pad_slack_share_a_batch_on_the_bulk_runner() -> None:
    queries = [words(n) for n in (28, 20, 24, 12, 30, 16, 22, 9)]  # 11-32 tokens, a query pass
    enc, small, bulk = encoder(bulk_min_tokens=64, pad_slack=16)
    enc.encode(queries, batch_size=64)
    # 14 is 18 short of 32: a new batch, which 11 joins (3 short), too small for the bulk runner (28 < 64)
    assert bulk.shapes == [(6, 32)] and small.shapes == [(2, 14)]
    enc, small, bulk = encoder(bulk_min_tokens=64, pad_slack=0)  # the ratio alone splits the same pass
    enc.encode(queries, batch_size=64)
    assert bulk.shapes == [(3, 32)] and small.shapes == [(2, 24), (1, 18), (1, 14), (1, 11)]


def test_long_texts_keep_the_ratio_rule_under_the_pad_slack() -> None:
    enc, small, bulk = encoder(bulk_min_tokens=64, pad_slack=16)
    enc.encode([words(200), words(150), words(145)], batch_size=64)
    assert small.shapes == [(1, 202)] and bulk.shapes == [(2, 152)]  # 152 < 0.8 x 202 and 50 > 16 apart


def test_without_a_bulk_runner_the_pad_slack_is_ignored() -> None:
    small = RecordingRunner("fp32")
    enc = BatchedEncoder(WordTokenizer(), 256, small, pad_slack=16)
    enc.encode([words(30), words(20)], batch_size=32)
    assert sorted(small.shapes) == [(1, 22), (1, 32)]


def test_a_lone_text_never_runs_on_the_bulk_runner() -> None:
    enc, small, bulk = encoder(bulk_min_tokens=16, parallel_rows=1)  # even with one worker and a low crossover
    enc.encode([words(100)], batch_size=32)
    assert small.shapes == [(1, 102)] and bulk.shapes == []


def test_a_lone_query_runs_on_the_fp32_runner() -> None:
    enc, small, bulk = encoder()
    enc.encode(["what port does the relay use"], batch_size=32)
    assert small.shapes == [(1, 8)] and bulk.shapes == []


def test_batches_of_at_least_bulk_min_tokens_run_on_the_bulk_runner() -> None:
    enc, small, bulk = encoder()
    sentences = [" ".join(["word"] * 20)] * 12  # 12 rows x 22 tokens = 264
    enc.encode([*sentences, "tiny"], batch_size=32)
    assert bulk.shapes == [(12, 22)]
    assert small.shapes == [(1, 3)]  # "tiny" is under half the batch's length: its own, small batch


def test_a_batch_with_fewer_rows_than_bulk_workers_stays_on_fp32() -> None:
    enc, small, bulk = encoder()
    enc.encode([" ".join(["word"] * 300)], batch_size=32)  # one 256-token chunk: one worker would run it
    assert small.shapes == [(1, 256)] and bulk.shapes == []


def test_rows_come_back_in_the_callers_order_across_runners() -> None:
    enc, _, _ = encoder(bulk_min_tokens=40)
    texts = ["a b c", " ".join(["w"] * 30), "d", " ".join(["w"] * 28), "e f"]
    got = enc.encode(texts, batch_size=32)
    assert got[:, 0].tolist() == [5, 32, 3, 30, 4]


def test_without_a_bulk_runner_everything_runs_on_the_one_runner() -> None:
    small = RecordingRunner("fp32")
    enc = BatchedEncoder(WordTokenizer(), 256, small)
    enc.encode([" ".join(["word"] * 50)] * 32, batch_size=32)
    assert enc.name == "fp32" and small.shapes == [(32, 52)]
