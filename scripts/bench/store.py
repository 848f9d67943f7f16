"""Benchmark Freki's vector store: write throughput, replace latency, search latency, optimize time.

Prints figures; asserts nothing (speed targets live here, not in tests). The edge backend also runs dense +
sparse search pairs next to two busy encoder threads, with the engine's search pool (one thread per CPU) and
on the calling thread (``search_threads=1``), and reports how long the caller waited inside the call: the
engine holds the GIL for a whole query, so time it spends waiting on its pool stalls every other Python
thread of the server. Example:

    .venv/bin/python -m scripts.bench.store --backend edge --points 10000 --dim 384
    .venv/bin/python -m scripts.bench.store --backend remote --points 2000   # qdrant-client local mode

The remote backend runs qdrant-client's local mode (brute-force Python), the only "server" on this box, so its
figures say nothing about a real Qdrant server.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable

from freki.store import (
    ChunkPoint,
    CollectionSpec,
    FieldMatch,
    SparseVector,
    StoreConfig,
    VectorStore,
    make_store,
)


def make_batch(rng: random.Random, n: int, dim: int, vocab: int, doc: str | None = None) -> list[ChunkPoint]:
    """``n`` random chunks over 4 tenants and n/20 documents, with 30-term sparse vectors."""
    points = []
    for i in range(n):
        terms = rng.sample(range(vocab), 30)
        points.append(
            ChunkPoint(
                id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                dense=[rng.gauss(0.0, 1.0) for _ in range(dim)],
                sparse=SparseVector(terms, [rng.uniform(0.1, 3.0) for _ in terms]),
                payload={
                    "tenant_id": f"tenant-{i % 4}",
                    "document_id": doc or f"doc-{rng.randrange(max(1, n // 20))}",
                    "owner_id": f"owner-{i % 7}",
                    "source_type": "markdown",
                    "chunk_hash": uuid.uuid4().hex,
                    "text": "lorem ipsum " * 40,
                    "metadata": {"lang": "en"},
                },
            )
        )
    return points


def latencies(fn: Callable[[int], object], repeats: int) -> str:
    """Run ``fn(i)`` ``repeats`` times; return p50/p95 in milliseconds."""
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    return f"p50 {statistics.median(times):7.2f} ms   p95 {p95:7.2f} ms"


def bench(store: VectorStore, args: argparse.Namespace) -> None:
    rng = random.Random(42)
    store.ensure_collection(CollectionSpec("bench", dense_dim=args.dim, embedding_model="bench-random"))
    flush = "" if store.backend == "remote" else (", WAL only" if args.no_flush else ", flush per write")
    print(f"\n== backend {store.backend}: {args.points} points, dim {args.dim}, batch {args.batch}{flush}")
    batches = [
        make_batch(rng, min(args.batch, args.points - done), args.dim, args.vocab)
        for done in range(0, args.points, args.batch)
    ]  # generated up front so the timing below is the store's alone
    start = time.perf_counter()
    for batch in batches:
        store.upsert(batch)
    elapsed = time.perf_counter() - start
    del batches
    print(f"upsert, batches of {args.batch:<5}    {args.points / elapsed:9.0f} points/s   ({elapsed:.1f} s)")

    queries = [[rng.gauss(0.0, 1.0) for _ in range(args.dim)] for _ in range(args.queries)]
    sparse_queries = [SparseVector(rng.sample(range(args.vocab), 8), [1.0] * 8) for _ in range(args.queries)]
    tenant = [FieldMatch("tenant_id", ("tenant-1",))]

    def searches(label: str) -> None:
        print(
            f"dense  top-10 {label:<14} {latencies(lambda i: store.search_dense(queries[i], tenant, 10), args.queries)}"
        )
        print(
            f"sparse top-10 {label:<14} "
            f"{latencies(lambda i: store.search_sparse(sparse_queries[i], tenant, 10), args.queries)}"
        )
        hybrid = latencies(lambda i: store.search_hybrid(queries[i], sparse_queries[i], tenant, 10, 50), args.queries)
        print(f"hybrid top-10 {label:<14} {hybrid}")

    searches("(unoptimized)")
    start = time.perf_counter()
    store.optimize()
    print(f"optimize                     {time.perf_counter() - start:9.1f} s")
    searches("(optimized)")
    print(f"count by tenant              {latencies(lambda i: store.count(tenant), 50)}")

    current = make_batch(rng, 20, args.dim, args.vocab, doc="replaced-doc")
    store.upsert(current)

    def replace(_: int) -> None:
        nonlocal current
        new = make_batch(rng, 20, args.dim, args.vocab, doc="replaced-doc")
        store.apply(new, [p.id for p in current], [])
        current = new

    print(f"apply: replace a 20-chunk doc {latencies(replace, 30)}")


def _busy_encoder(stop: threading.Event, dim: int) -> None:
    """A matrix product per loop on one core, GIL released, like an embedding runner's thread."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.rand(256, dim).astype(np.float32)
    w = np.random.rand(dim, 4 * dim).astype(np.float32)
    with threadpool_limits(1):
        while not stop.is_set():
            a @ w


def contention(data_dir: str, args: argparse.Namespace) -> None:
    """Dense + sparse search pairs next to two busy encoder-like threads, per ``search_threads`` setting.

    Besides latency it reports how much of each pair the calling thread spent *waiting* (wall time minus its
    own CPU time): qdrant-edge holds the GIL for the whole call, so every other Python thread waits too.
    """
    rng = random.Random(7)
    queries = [[rng.gauss(0.0, 1.0) for _ in range(args.dim)] for _ in range(args.queries)]
    sparse_queries = [SparseVector(rng.sample(range(args.vocab), 8), [1.0] * 8) for _ in range(args.queries)]
    tenant = [FieldMatch("tenant_id", ("tenant-1",))]
    print("\n== edge: dense + sparse top-100 pairs next to 2 busy encoder threads (GIL released, 1 core each)")
    for threads in (os.cpu_count() or 2, 1):
        store = make_store(StoreConfig(backend="edge", data_dir=data_dir, search_threads=threads))
        store.ensure_collection(CollectionSpec("bench", dense_dim=args.dim, embedding_model="bench-random"))
        stop = threading.Event()
        encoders = [threading.Thread(target=_busy_encoder, args=(stop, args.dim)) for _ in range(2)]
        for encoder in encoders:
            encoder.start()
        waited: list[float] = []

        def pair(i: int, store: VectorStore = store, waited: list[float] = waited) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            store.search_dense(queries[i], tenant, 100, with_payload=False)
            store.search_sparse(sparse_queries[i], tenant, 100, with_payload=False)
            waited.append(max(0.0, (time.perf_counter() - wall) - (time.thread_time() - cpu)))

        try:
            pairs = latencies(pair, args.queries)
        finally:
            stop.set()
            for encoder in encoders:
                encoder.join()
            store.close()
        label = f"{threads} (calling thread)" if threads == 1 else f"{threads} (engine pool)"
        wait_ms = statistics.mean(waited) * 1000
        print(f"search_threads={label:<20} {pairs}   caller waiting, GIL held: {wait_ms:5.2f} ms per pair")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["edge", "remote", "both"], default="edge")
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vocab", type=int, default=30_000, help="sparse vocabulary size")
    parser.add_argument("--no-flush", action="store_true", help="edge: rely on the WAL, no flush per write")
    args = parser.parse_args()
    backends = ["edge", "remote"] if args.backend == "both" else [args.backend]
    for backend in backends:
        with tempfile.TemporaryDirectory(prefix="bench_store_") as tmp:
            config = (
                StoreConfig(backend="edge", data_dir=tmp, flush_writes=not args.no_flush)
                if backend == "edge"
                else StoreConfig(backend="remote", location=":memory:")
            )
            store = make_store(config)
            try:
                bench(store, args)
            finally:
                store.close()
            if backend == "edge":
                contention(tmp, args)


if __name__ == "__main__":
    main()
