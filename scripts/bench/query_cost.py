"""What a default (hybrid, convex fusion) query costs next to a dense-only one, in process, search path only.

Opens an indexed Freki data dir (default: the SciFact eval index under ``FREKI_EVAL_CACHE``) with
``FrekiEngine`` and embeds every query text once beforehand, so only the search path is timed: sparse query
encoding, the store calls, fusion, payloads. Dense and default queries alternate query by query, and each text
runs ``--rounds`` times, so load from other work on the box hits both modes alike. Prints per mode the p50
of CPU time (``time.process_time``: the engine may search on its own threads) and wall time per query, the
default/dense ratio of both, and the store calls per query.

    .venv/bin/python -m scripts.bench.query_cost                       # SciFact eval index, 300 claims
    .venv/bin/python -m scripts.bench.query_cost --data-dir .cache/freki-bench/synth-v2-100000-12085
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from freki.engine import FrekiEngine
from freki.search.retrieval import Query
from scripts.evalsets import scifact
from scripts.evalsets.harness import CACHE, eval_settings, shared_embedder


class Counting:
    """Counts the calls a retriever makes into the store it wraps."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


def default_dir() -> Path:
    found = sorted(CACHE.glob("scifact-*/eval-complete.json"), key=lambda p: p.stat().st_size)
    if not found:
        sys.exit(f"no indexed SciFact cache under {CACHE}; run python -m scripts.eval.retrieval --sets scifact first")
    return found[-1].parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="a Freki data dir (default: SciFact eval)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=10)
    args = parser.parse_args()
    data_dir = args.data_dir or default_dir()
    settings = eval_settings(data_dir)
    engine = FrekiEngine(settings, embedder=shared_embedder(settings))
    try:
        tenant = str(engine.chunks.scroll([], limit=1)[0][0].payload["tenant_id"])
        texts = list(scifact.load().queries.values())[: args.queries]
        vectors = {t: engine.embedder.embed_query(t) for t in texts}
        retriever = engine.retriever
        retriever._embed_query = lambda text: np.asarray(vectors[text])  # search path only
        counting = Counting(retriever._chunks)
        retriever._chunks = counting  # type: ignore[assignment]
        cpu: dict[str, list[float]] = {"dense": [], "default": []}
        wall: dict[str, list[float]] = {"dense": [], "default": []}
        calls: dict[str, Counter[str]] = {"dense": Counter(), "default": Counter()}
        for mode in ("dense", "hybrid"):  # warm up
            retriever.retrieve(Query(tenant, texts[0], args.top_k, 0.0, mode=mode))
        for _ in range(args.rounds):
            for text in texts:
                for label, mode in (("dense", "dense"), ("default", "hybrid")):
                    query = Query(tenant, text, args.top_k, 0.0, mode=mode)
                    counting.calls.clear()
                    c0, w0 = time.process_time(), time.perf_counter()
                    retriever.retrieve(query)
                    cpu[label].append((time.process_time() - c0) * 1000)
                    wall[label].append((time.perf_counter() - w0) * 1000)
                    calls[label].update(counting.calls)
        n = len(texts) * args.rounds
        count = engine.chunks.count([])
        print(f"{data_dir}: {count:,} chunks, {len(texts)} queries x {args.rounds} rounds, top {args.top_k}, "
              f"fusion {retriever.config.fusion}")
        for label in ("dense", "default"):
            per_call = ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(calls[label].items()))
            print(f"  {label:8s} cpu p50 {statistics.median(cpu[label]):.2f} ms, wall p50 "
                  f"{statistics.median(wall[label]):.2f} ms, mean {statistics.fmean(wall[label]):.2f} ms; "
                  f"store calls per query: {per_call}")
        print(f"  default / dense: cpu {statistics.median(cpu['default']) / statistics.median(cpu['dense']):.2f}, "
              f"wall {statistics.median(wall['default']) / statistics.median(wall['dense']):.2f}")
    finally:
        engine.close()


if __name__ == "__main__":
    main()
