"""Micro-batching of concurrent query embeddings."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from freki.embed.query_batching import QueryBatcher
from wolf_service.errors import Unavailable


class SlowEncoder:
    """Stands in for the model: records batch sizes, takes a while per pass."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[int] = []
        self.fail_on = fail_on
        self.hold: threading.Event | None = None  # a pass holding "first" waits for it

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        if self.hold is not None and "first" in texts:
            self.hold.wait(10)
        time.sleep(0.05)
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


def run_concurrently(batcher: QueryBatcher, texts: list[str]) -> dict[str, object]:
    results: dict[str, object] = {}

    def one(text: str) -> None:
        try:
            results[text] = batcher.encode(text)
        except RuntimeError as exc:
            results[text] = exc

    threads = [threading.Thread(target=one, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return results


def in_one_shared_pass(batcher: QueryBatcher, texts: list[str]) -> dict[str, object]:
    """``texts`` encoded concurrently while a first call holds the model (a SlowEncoder's): its pass is held
    until every one of them has queued, so they share the next pass however loaded the box is."""
    encoder: SlowEncoder = batcher._encode  # type: ignore[assignment]
    encoder.hold = release = threading.Event()
    first = threading.Thread(target=batcher.encode, args=("first",))
    first.start()
    results: dict[str, object] = {}
    done = threading.Thread(target=lambda: results.update(run_concurrently(batcher, texts)))
    done.start()
    deadline = time.monotonic() + 10
    while len(batcher._pending) < len(texts) and time.monotonic() < deadline:
        time.sleep(0.005)
    release.set()
    first.join(10)
    done.join(20)
    encoder.hold = None
    return results


def six_callers_behind_a_lone_pass(batcher: QueryBatcher, error: type[BaseException]) -> list[str]:
    """Six callers, each a little after the one before: the first gets a pass of its own, the other five queue
    up behind it and share the next. Each caller's outcome: "ok" or the name of the ``error`` it got."""
    outcomes: list[str] = []

    def one(text: str) -> None:
        try:
            batcher.encode(text)
            outcomes.append("ok")
        except error:
            outcomes.append(error.__name__)

    threads = [threading.Thread(target=one, args=(f"q{i}",)) for i in range(6)]
    for t in threads:
        t.start()
        time.sleep(0.005)
    for t in threads:
        t.join(10)
    return outcomes


def test_concurrent_queries_share_passes_and_get_their_own_vector() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, max_batch=64)
    texts = ["x" * n for n in range(1, 41)]
    results = run_concurrently(batcher, texts)
    assert all(results[t][0] == len(t) for t in texts)  # type: ignore[index]
    assert len(encoder.batches) < len(texts) / 4  # 40 queries in a handful of passes
    assert sum(encoder.batches) == len(texts)


def test_a_lone_query_is_not_delayed() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder)
    started = time.perf_counter()
    batcher.encode("hello")
    assert encoder.batches == [1]
    assert time.perf_counter() - started < 1.0


def test_batch_size_is_capped() -> None:
    encoder = SlowEncoder()
    run_concurrently(QueryBatcher(encoder, max_batch=4), [f"q{i}" for i in range(20)])
    assert max(encoder.batches) <= 4 and sum(encoder.batches) == 20


def test_a_text_that_fails_the_encoder_fails_only_its_own_call() -> None:
    encoder = SlowEncoder(fail_on="bad")
    batcher = QueryBatcher(encoder, max_batch=64)
    good = [f"q{i}" for i in range(10)]
    results = in_one_shared_pass(batcher, ["bad", *good])
    assert encoder.batches[:2] == [1, 11]  # "bad" and the ten others were in one pass, which failed
    assert isinstance(results["bad"], RuntimeError)
    assert all(results[t][0] == len(t) for t in good)  # type: ignore[index]
    assert batcher.encode("fine")[0] == 4.0  # the batcher recovers


def test_a_failure_that_is_not_an_exception_is_not_retried_call_by_call() -> None:
    class Stop(BaseException):
        pass

    passes: list[int] = []

    def encoder(texts: Sequence[str]) -> np.ndarray:
        passes.append(len(texts))
        time.sleep(0.05)
        if len(passes) > 1:  # the first (lone) pass succeeds while the others queue up behind it
            raise Stop
        return np.zeros((len(texts), 2), dtype=np.float32)

    outcomes = six_callers_behind_a_lone_pass(QueryBatcher(encoder, max_batch=64), Stop)
    assert sorted(outcomes) == sorted(["ok", *["Stop"] * 5])
    assert passes == [1, 5]  # the failed shared pass was not retried one call at a time

def test_a_server_that_is_down_is_not_asked_again_call_by_call() -> None:
    passes: list[int] = []

    def encoder(texts: Sequence[str]) -> np.ndarray:
        passes.append(len(texts))
        time.sleep(0.05)
        if len(passes) > 1:
            raise Unavailable("cannot reach embedding server 'e5'")
        return np.zeros((len(texts), 2), dtype=np.float32)

    outcomes = six_callers_behind_a_lone_pass(QueryBatcher(encoder, max_batch=64), Unavailable)
    assert sorted(outcomes) == sorted(["ok", *["Unavailable"] * 5])
    assert sum(passes) == 6, f"no text asked for twice (passes {passes})"


def test_waiting_for_company_gathers_a_batch() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, max_batch=8, max_wait_s=0.2)
    run_concurrently(batcher, [f"q{i}" for i in range(8)])
    assert encoder.batches[0] > 1


def test_invalid_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        QueryBatcher(SlowEncoder(), max_batch=0)


def test_calls_with_several_texts_get_their_own_rows_back() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, max_batch=8)
    results: dict[int, np.ndarray] = {}

    def one(n: int) -> None:
        results[n] = batcher.encode_many(["y" * (n * 10 + i) for i in range(1, n + 1)])

    threads = [threading.Thread(target=one, args=(n,)) for n in (1, 3, 12, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    for n, rows in results.items():
        assert [int(r[0]) for r in rows] == [n * 10 + i for i in range(1, n + 1)]
    assert sum(encoder.batches) == 18  # the 12-text call exceeds max_batch and still goes (alone)


@pytest.mark.integration
def test_embedder_batches_concurrent_calls_with_the_real_model(embedder) -> None:  # type: ignore[no-untyped-def]
    """Batched embedding gives the same vectors as embedding each text alone."""
    from freki.embed.embedder import Embedder

    texts = [f"question number {i} about coolant pumps" for i in range(12)]
    alone = embedder.embed(texts)
    batched = Embedder("all-MiniLM-L6-v2")
    batched.enable_batching(max_batch=64)
    out: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, batched.embed_query(texts[i])))
               for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert all(float(np.dot(out[i], alone[i])) > 0.999 for i in range(12))


@pytest.mark.integration
def test_enabling_batching_again_keeps_one_queue(embedder) -> None:  # type: ignore[no-untyped-def]
    """A model shared by two indexes (migration) is enabled twice: its calls must keep sharing one batcher."""
    from freki.embed.embedder import Embedder

    model = Embedder("all-MiniLM-L6-v2")
    model.enable_batching(max_batch=64)
    first = model._batcher
    model.enable_batching(max_batch=64)
    assert model._batcher is first
    model.enable_batching(max_batch=8, max_wait_s=0.002)  # a settings reload does replace it
    assert model._batcher is not first and model._batcher is not None
    assert model._batcher.settings == (8, 0.002, 16)
    assert float(np.dot(model.embed_query("coolant pump"), embedder.embed(["coolant pump"])[0])) > 0.999


def test_queries_jump_ahead_of_queued_indexing_work() -> None:
    """While one pass runs, indexing slices queue up; a query arriving last goes in the next pass, alone."""
    release = threading.Event()
    passes: list[list[str]] = []

    def gated(texts: Sequence[str]) -> np.ndarray:
        passes.append(list(texts))
        if len(passes) == 1:
            release.wait(10)
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    batcher = QueryBatcher(gated, max_batch=64)
    slices = [[f"doc{i}-chunk{j}" for j in range(32)] for i in range(4)]
    threads = [threading.Thread(target=batcher.encode_many, args=(s,)) for s in slices]
    threads[0].start()
    while not passes:  # slice 0 is running (blocked) ...
        time.sleep(0.001)
    for t in threads[1:]:  # ... slices 1-3 queue behind it ...
        t.start()
    while len(batcher._pending) < 3:
        time.sleep(0.001)
    query: dict[str, np.ndarray] = {}
    asker = threading.Thread(target=lambda: query.__setitem__("v", batcher.encode_many(["the query"], urgent=True)))
    asker.start()  # ... and the query arrives last.
    while len(batcher._pending) < 4:
        time.sleep(0.001)
    release.set()
    for t in [*threads, asker]:
        t.join(10)
    assert passes[1] == ["the query"]
    assert query["v"][0][0] == len("the query")
    assert sorted(len(p) for p in passes[2:]) == [32, 64]  # the indexing slices still share passes


def test_each_waiter_is_woken_once_not_on_every_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pass used to wake every waiter (notify_all) only for most to sleep again: a thread switch and a GIL
    hand-off each. Now a waiter wakes when its rows are ready, or once more when it is handed the lead."""
    import sys

    wakeups: list[int] = []

    class CountingCondition(threading.Condition):
        """Counts the waits that return to code in query_batching (directly, or through an Event)."""

        def wait(self, timeout: float | None = None) -> bool:
            woke = super().wait(timeout)
            frame = sys._getframe(1)  # Event.wait, or the waiting code itself
            if any(f is not None and f.f_code.co_filename.endswith("freki/embed/query_batching.py")
                   for f in (frame, frame.f_back)):
                wakeups.append(1)
            return woke

    monkeypatch.setattr(threading, "Condition", CountingCondition)
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, max_batch=4)  # 40 queries, >= 10 passes
    results = run_concurrently(batcher, [f"q{i:02d}" for i in range(40)])
    assert all(results[f"q{i:02d}"][0] == 3 for i in range(40))  # type: ignore[index]
    assert len(encoder.batches) >= 10
    assert len(wakeups) <= 40 + len(encoder.batches)  # one shared notify_all: 938 here


def test_many_callers_with_mixed_urgency_all_get_their_rows() -> None:
    """Hand-offs under churn: 32 threads, 20 calls each, 1-3 texts, some urgent; nobody hangs or gets another's rows."""
    def fast(texts: Sequence[str]) -> np.ndarray:
        return np.asarray([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    batcher = QueryBatcher(fast, max_batch=5)
    wrong: list[str] = []

    def caller(n: int) -> None:
        for i in range(20):
            texts = ["z" * (n * 100 + i * 3 + j) for j in range(1 + (n + i) % 3)]
            rows = batcher.encode_many(texts, urgent=(n + i) % 2 == 0)
            if [int(r[0]) for r in rows] != [len(t) for t in texts]:
                wrong.append(f"{n}/{i}")

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads) and not wrong
    assert batcher.texts == sum(1 + (n + i) % 3 for n in range(32) for i in range(20))


def test_a_lone_caller_does_not_wait_for_company_it_will_not_get() -> None:
    """With max_wait_s set, waiting pays only under load: a caller alone (its last passes served it alone) is not
    delayed, while callers that arrive together still gather."""
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, max_batch=8, max_wait_s=0.5)
    batcher.encode("first")  # the first pass may wait: nothing is known yet
    started = time.perf_counter()
    for i in range(3):
        batcher.encode(f"alone {i}")
    assert time.perf_counter() - started < 3 * 0.05 + 0.4  # three 50 ms passes, no 0.5 s waits
    run_concurrently(batcher, [f"q{i}" for i in range(8)])
    assert max(encoder.batches) > 1  # together they still share passes


class PrefixFailEncoder(SlowEncoder):
    """Fails a pass that holds any text starting with "bad"."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if any(t.startswith("bad") for t in texts):
            self.batches.append(len(texts))
            time.sleep(0.01)
            raise RuntimeError("model failed")
        return super().__call__(texts)


def test_a_failed_pass_of_bad_calls_costs_one_more_pass_per_call_and_no_more() -> None:
    """The pathological stream (every call bad): each text is encoded at most twice, in k + 1 passes for k calls."""
    encoder = PrefixFailEncoder()
    texts = [f"bad{i}" for i in range(16)]
    results = in_one_shared_pass(QueryBatcher(encoder, max_batch=64), texts)
    assert all(isinstance(results[t], RuntimeError) for t in texts)
    assert encoder.batches == [1, 16] + [1] * 16


@pytest.mark.integration
def test_hostile_texts_among_many_threads_fail_only_their_calls_with_the_real_model(embedder) -> None:  # type: ignore[no-untyped-def]
    """16 threads, random urgency, texts of 1-50 characters, ~10 % of them making the real encoder raise (a lone
    surrogate: the tokenizer refuses it; gRPC never delivers one, but nothing here relies on that): no hang,
    every good call gets its own vectors, every call with a bad text fails."""
    import random
    import string

    rng = random.Random(7)
    bad_mark = "\ud800"

    def text() -> str:
        s = "".join(rng.choice(string.ascii_letters + " ") for _ in range(rng.randint(1, 50)))
        return s[:-1] + bad_mark if rng.random() < 0.1 else s

    plans = [[([text() for _ in range(rng.choice([1, 1, 2, 3]))], rng.random() < 0.5) for _ in range(6)]
             for _ in range(16)]
    good_texts = sorted({t for plan in plans for texts, _ in plan for t in texts if bad_mark not in t})
    reference = dict(zip(good_texts, embedder.embed(good_texts), strict=True))
    batcher = QueryBatcher(embedder._encode, max_batch=64)
    outcomes: list[tuple[list[str], object]] = []

    def work(plan: list[tuple[list[str], bool]]) -> None:
        for texts, urgent in plan:
            try:
                outcomes.append((texts, batcher.encode_many(texts, urgent=urgent)))
            except TypeError as exc:
                outcomes.append((texts, exc))

    threads = [threading.Thread(target=work, args=(plan,)) for plan in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and len(outcomes) == 96
    for texts, got in outcomes:
        if any(bad_mark in t for t in texts):
            assert isinstance(got, TypeError)
        else:
            assert isinstance(got, np.ndarray) and got.shape[0] == len(texts)
            assert all(float(np.dot(got[i], reference[t])) > 0.999 for i, t in enumerate(texts))
    assert any(isinstance(got, TypeError) for _, got in outcomes) and batcher.batches < 96  # shared passes
