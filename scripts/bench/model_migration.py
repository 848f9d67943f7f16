"""Benchmark FullReindex re-chunking and a blue/green model migration on SciFact abstracts.

Real models, real Qdrant engine (edge). Prints figures; asserts nothing.

    .venv/bin/python -m scripts.bench.model_migration --docs 500

Steps: index N abstracts with all-MiniLM-L6-v2; FullReindex (re-chunk from the kept sources with smaller
chunks); restart with a second real model (MiniLM's first 3 layers, saved to a temp dir and loaded by path) —
the old index serves; start the migration and time it while queries keep running (latency before vs during),
the switch (writes paused) and the process's RSS (both models loaded during the migration).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from scripts.common import rss_mb

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from scripts.evalsets import scifact
from tests.freki.engine.small_models_support import build_second_model


def latencies(engine: FrekiEngine, claims: list[str], stop: threading.Event | None = None
              ) -> list[tuple[float, float]]:
    """(wall ms, this thread's CPU ms) per query, cycling through ``claims`` (once, or until ``stop``)."""
    out, i = [], 0
    while (stop is None and i < len(claims)) or (stop is not None and not stop.is_set()):
        text = claims[i % len(claims)] + f" #{i}"  # distinct text: no query or result cache hit
        started, cpu = time.perf_counter(), time.thread_time()
        engine.retrieve(Query(tenant_id="default", text=text, top_k=5, score_threshold=0.0, mode="hybrid"))
        out.append(((time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000))
        i += 1
    return out


def show(label: str, samples: list[tuple[float, float]]) -> str:
    walls, cpus = sorted(w for w, _ in samples), sorted(c for _, c in samples)
    return (f"{label}: n={len(walls)} wall p50 {statistics.median(walls):.1f} ms, p95 "
            f"{walls[int(0.95 * (len(walls) - 1))]:.1f} ms; CPU of the query thread p50 "
            f"{statistics.median(cpus):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--backend", default="torch", choices=["torch", "onnx"])
    parser.add_argument("--skip-rechunk", action="store_true")
    args = parser.parse_args()
    data = scifact.load()
    ids = sorted(data.corpus)[: args.docs]
    claims = [data.queries[q] for q in sorted(data.qrels["test"])][:60]
    with tempfile.TemporaryDirectory() as tmp:
        base = {"data_dir": Path(tmp) / "data", "embedding_backend": args.backend,
                "reindex": {"switch_grace_s": 1.0}, "store": {"maintenance_interval_s": 0}}
        engine = FrekiEngine(FrekiSettings(**base))  # type: ignore[arg-type]
        t0, c0 = time.perf_counter(), time.process_time()
        for doc_id in ids:
            engine.index(IndexInput(tenant_id="default", document_id=doc_id, data=data.corpus[doc_id]))
        chunks = engine.status(None).chunk_count
        print(f"indexed {len(ids)} docs ({chunks} chunks): {time.perf_counter() - t0:.1f} s wall, "
              f"{time.process_time() - c0:.1f} s CPU")
        engine.close()

        smaller = {**base, "chunking": {"max_tokens": 120, "min_tokens": 30, "overlap_tokens": 10}}
        engine = FrekiEngine(FrekiSettings(**smaller))  # type: ignore[arg-type]
        t0, c0 = time.perf_counter(), time.process_time()
        report = engine.full_reindex("default") if not args.skip_rechunk else None
        if report is not None:
            print(f"FullReindex (re-chunk from kept sources, max_tokens 1000 -> 120): {report.rechunked} re-chunked, "
                  f"{report.reembedded_only} re-embedded only, {engine.status(None).chunk_count} chunks "
                  f"(was {chunks}): "
                  f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")
        engine.close()

        model = build_second_model(Path(tmp) / "minilm3")
        engine = FrekiEngine(FrekiSettings(**smaller, embedding_model=model))  # type: ignore[arg-type]
        print(f"restart with the second model: serving {engine.status(None).embedding_model!r}, "
              f"RSS {rss_mb():.0f} MB")
        latencies(engine, claims[:10])  # warm-up
        before = latencies(engine, claims * 4)
        stop = threading.Event()
        during: list[tuple[float, float]] = []
        peak = [rss_mb()]
        t0, c0 = time.perf_counter(), time.process_time()
        engine.blue_green.start()
        worker = threading.Thread(target=lambda: during.extend(latencies(engine, claims, stop)))
        worker.start()
        while (status := engine.blue_green.status()) is not None and status.state not in ("done", "failed"):
            peak.append(rss_mb())
            time.sleep(0.2)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        stop.set()
        worker.join()
        assert status is not None and status.state == "done", status
        print(f"migration of {status.documents_total} docs to the 3-layer model: {wall:.1f} s wall, {cpu:.1f} s CPU "
              f"(all threads, incl. the queries running meanwhile); writes paused {engine.blue_green.switch_ms:.0f} ms "
              "for the switch")
        print(show("queries before", before))
        print(show("queries during", during))
        time.sleep(2.0)
        import gc

        gc.collect()
        print(f"RSS: {peak[0]:.0f} MB before, peak {max(peak):.0f} MB during (two models), {rss_mb():.0f} MB after "
              f"the old index was closed; serving {engine.status(None).embedding_model!r}, "
              f"{engine.status(None).document_count} docs")
        engine.close()


if __name__ == "__main__":
    main()
