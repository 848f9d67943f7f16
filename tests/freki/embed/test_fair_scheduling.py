"""The encoder's scheduling rules: indexing in small passes with queries first at every pass boundary,
tenants in turn, and (with the real model) queries on a lane of their own beside a running indexing pass."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Sequence

import numpy as np
import pytest

from freki.embed.query_batching import QueryBatcher


class GatedEncoder:
    """Stands in for the model at the batcher's seam: records each pass; the first pass waits for ``release``."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.passes: list[list[str]] = []
        self.release = threading.Event()
        self.fail_on = fail_on

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.passes.append(list(texts))
        if len(self.passes) == 1:
            self.release.wait(30)
        if self.fail_on in texts:
            raise RuntimeError("model failed")
        return np.asarray([[float(t.rsplit("-", 1)[-1]) if t[-1].isdigit() else -1.0, 1.0] for t in texts],
                          dtype=np.float32)


def wait_until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Wait for a state another thread reaches (a hang is reported, not asserted on speed)."""
    for _ in range(30_000):
        if condition():
            return
        time.sleep(0.001)
    raise AssertionError(f"never reached: {what}")


def call(batcher: QueryBatcher, results: dict[str, object], key: str, texts: list[str],
         **kw: object) -> threading.Thread:
    def run() -> None:
        try:
            results[key] = batcher.encode_many(texts, **kw)  # type: ignore[arg-type]
        except RuntimeError as exc:
            results[key] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_query_goes_before_the_rest_of_a_long_indexing_call() -> None:
    """An indexing call of 32 texts runs as passes of 8; a query submitted while the first pass runs (the
    other 24 texts queued) is served in the very next pass, and the indexing call still gets its rows in order."""
    encoder = GatedEncoder()
    batcher = QueryBatcher(encoder, max_batch=64, pass_texts=8)
    results: dict[str, object] = {}
    texts = [f"chunk-{i}" for i in range(32)]
    indexing = call(batcher, results, "index", texts, tenant="a")
    wait_until(lambda: encoder.passes, "the first indexing pass runs")
    asker = call(batcher, results, "query", ["query-99"], urgent=True)
    wait_until(lambda: any(p.urgent for p in batcher._pending), "the query is queued")
    encoder.release.set()
    for thread in (indexing, asker):
        thread.join(30)
    assert [len(p) for p in encoder.passes] == [8, 1, 8, 8, 8]
    assert encoder.passes[1] == ["query-99"]
    index_rows = results["index"]
    assert isinstance(index_rows, np.ndarray)
    assert index_rows[:, 0].tolist() == list(range(32))  # every slice's rows, in the call's order


def test_tenants_take_turns_between_passes() -> None:
    """Tenant A has four calls queued; tenant B's one call, queued last, is done within the next two passes
    (first come, first served would run it after all of A's)."""
    encoder = GatedEncoder()
    batcher = QueryBatcher(encoder, max_batch=64, pass_texts=16)
    results: dict[str, object] = {}
    threads = [call(batcher, results, "a0", [f"a0-{i}" for i in range(16)], tenant="a")]
    wait_until(lambda: encoder.passes, "A's first pass runs")
    for n in (1, 2, 3):
        threads.append(call(batcher, results, f"a{n}", [f"a{n}-{i}" for i in range(16)], tenant="a"))
        wait_until(lambda n=n: len(batcher._pending) == n, f"A's call {n} is queued")
    threads.append(call(batcher, results, "b", [f"b-{i}" for i in range(16)], tenant="b"))
    wait_until(lambda: len(batcher._pending) == 4, "B's call is queued")
    encoder.release.set()
    for thread in threads:
        thread.join(30)
    b_passes = [n for n, texts in enumerate(encoder.passes) if any(t.startswith("b-") for t in texts)]
    assert b_passes == [1, 2]
    assert all(len(p) == 16 for p in encoder.passes)
    assert sum(len(p) for p in encoder.passes) == 80
    assert all(isinstance(results[k], np.ndarray) and len(results[k]) == 16 for k in ("a0", "a1", "a2", "a3", "b"))  # type: ignore[arg-type]


def test_a_slice_that_fails_fails_its_call_and_the_rest_is_not_encoded() -> None:
    encoder = GatedEncoder(fail_on="chunk-bad")
    encoder.release.set()
    batcher = QueryBatcher(encoder, max_batch=64, pass_texts=8)
    texts = [f"chunk-{i}" for i in range(20)]
    texts[10] = "chunk-bad"
    with pytest.raises(RuntimeError, match="model failed"):
        batcher.encode_many(texts, tenant="a")
    assert [len(p) for p in encoder.passes] == [8, 8]  # the third slice never ran
    assert not batcher._pending
    assert batcher.encode_many(["after-1"]).shape == (1, 2)  # the batcher is free again


def test_pass_size_is_validated() -> None:
    with pytest.raises(ValueError, match="pass_texts"):
        QueryBatcher(GatedEncoder(), pass_texts=0)


@pytest.mark.integration
def test_a_query_is_embedded_while_an_indexing_pass_runs(embedder, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The real model: an indexing pass held inside the model does not hold a query, which runs on the query
    lane and gets the same vector as always; the pass runs on the indexing thread."""
    assert embedder.query_lane
    question = f"coolant pump pressure {uuid.uuid4().hex[:8]}"  # never asked before: not in the query cache
    reference = embedder.embed([question])[0]
    inside, release = threading.Event(), threading.Event()
    seen: dict[str, str] = {}
    real = embedder._encoder

    class HeldEncoder:
        name = real.name

        def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
            seen["thread"] = threading.current_thread().name
            inside.set()
            release.wait(60)
            return real.encode(texts, batch_size)

    monkeypatch.setattr(embedder, "_encoder", HeldEncoder())
    rows: dict[str, np.ndarray] = {}
    indexing = threading.Thread(target=lambda: rows.__setitem__("v", embedder.embed(["a chunk of tenant A"] * 40,
                                                                                     tenant="a")))
    indexing.start()
    try:
        assert inside.wait(60), "the indexing pass never started"
        query = embedder.embed_query(question, scope="b")
        assert indexing.is_alive()  # the query came back while the indexing pass was still held
        assert float(np.dot(query, reference)) > 0.9999
        assert seen["thread"].startswith("freki-index-pass")
    finally:
        release.set()
        indexing.join(60)
    assert rows["v"].shape == (40, embedder.dimension)


def test_the_indexing_thread_and_the_threads_it_starts_run_at_the_indexing_priority() -> None:
    """Linux nice is per thread and inherited by threads a thread starts (ONNX Runtime's and torch's pools)."""
    from freki.embed.scheduling import IndexPassThread

    def own_and_child_nice() -> tuple[int, int]:
        child: list[int] = []
        thread = threading.Thread(target=lambda: child.append(
            os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        thread.start()
        thread.join()
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), child[0]

    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert IndexPassThread(nice=max(base, 7)).run(own_and_child_nice) == (max(base, 7), max(base, 7))
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base  # the caller's is untouched
