"""Scaling figures for docs/scaling.md: what a Freki replica costs at 10k and 100k chunks, and two replicas vs one.

Prints figures; asserts nothing. For each size, a collection synthesised from real indexed SciFact chunks
(``scripts.bench.synthetic.synthesise``: real texts and BM25 vectors, perturbed copies of real dense vectors; embedding
100k real chunks takes hours here) is served by ``freki serve`` in its own process, as deployed:

- store build: upsert + HNSW build seconds (the engine's share of indexing; embedding is the rest, see
  ``scripts/bench/freki.py`` section 1), disk size;
- server RSS at rest after start, and after the queries;
- RetrieveContext p50 / p99, hybrid (the default) and dense, one client, every query text new, the two modes
  alternating query by query; the ratio of the two p50s; the server's CPU time per query in each mode (from
  /proc, summed over the calls: robust to load from other work, which wall times are not); and the p50 of one
  query repeated (served by the result cache).

``--replicas``: hybrid queries/s with 64 concurrent clients against one ``freki serve`` and against two
(each serving its own copy of the 10k collection, clients split between them): what a second replica on
the same box buys. Reads only; the write consistency of replicas is tested in tests/freki/api/test_replicas.py.

    .venv/bin/python -m scripts.bench.scale                    # 10k and 100k, ~10 min (100k HNSW build ~3 min)
    .venv/bin/python -m scripts.bench.scale --sizes 10000 --replicas
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scripts.bench.synthetic import complete_seed_dir, seed_points, synth_dir, synthesise
from scripts.common import cpu_seconds
from scripts.evalsets import scifact
from scripts.evalsets.harness import CACHE, eval_settings, retrieve_request, shared_embedder
from scripts.services import freki_process


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def du_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


@contextmanager
def serve(data_dir: Path) -> Iterator[tuple[str, int]]:
    """``freki serve`` on ``data_dir`` in its own process; yields (address, pid) once SERVING."""
    pid: list[int] = []
    with freki_process(eval_settings(data_dir), "Freki (scale)", timeout_s=300, pid=pid) as target:
        yield target, pid[0]


def seed_dir() -> Path:
    found = complete_seed_dir()
    if found is None:
        sys.exit(f"no indexed SciFact cache under {CACHE}; run python -m scripts.eval.retrieval --sets scifact first")
    return found


async def load(targets: list[str], texts: list[str], clients: int) -> float:
    """Queries/s with ``clients`` in flight, spread round-robin over ``targets``."""
    import grpc
    from wolf.v1 import freki_pb2_grpc

    channels = [grpc.aio.insecure_channel(t) for t in targets]
    stubs = [freki_pb2_grpc.FrekiServiceStub(c) for c in channels]
    for stub in stubs:
        await stub.RetrieveContext(retrieve_request("warm up", "hybrid", 5), timeout=60)
    pending = iter(texts)

    async def client(stub) -> None:  # type: ignore[no-untyped-def]
        for text in pending:
            await stub.RetrieveContext(retrieve_request(text, "hybrid", 5), timeout=60)

    started = time.perf_counter()
    await asyncio.gather(*(client(stubs[i % len(stubs)]) for i in range(clients)))
    elapsed = time.perf_counter() - started
    for c in channels:
        await c.close()
    return len(texts) / elapsed


def size_figures(size: int, seed, identity, queries: list[str]) -> None:  # type: ignore[no-untyped-def]
    import grpc
    from wolf.v1 import freki_pb2, freki_pb2_grpc

    fresh = not (synth_dir(size, len(seed)) / "complete").exists()
    started = time.perf_counter()
    data_dir = synthesise(size, seed, identity)
    build = f"{time.perf_counter() - started:.0f} s" if fresh else "cached"
    with serve(data_dir) as (target, pid), grpc.insecure_channel(target) as channel:
        stub = freki_pb2_grpc.FrekiServiceStub(channel)
        stub.RetrieveContext(retrieve_request("warm up", "hybrid", 5), timeout=60)
        serving = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=60).chunk_count
        found = stub.RetrieveContext(retrieve_request(queries[0], "hybrid", 5, score_threshold=0.0),
                                     timeout=60).rag_context.documents
        if serving != size or not found:  # never time an index that is not the one described
            sys.exit(f"the served index holds {serving:,} chunks, not {size:,} (or answers nothing)")
        at_rest = rss_mib(pid)
        times: dict[str, list[float]] = {"hybrid": [], "dense": []}
        cpu = dict.fromkeys(times, 0.0)  # the server's CPU seconds per mode (it serves nothing else meanwhile)
        for q in queries:  # the modes alternate query by query, so load from other work hits both alike
            for mode, spent in times.items():
                c0, t0 = cpu_seconds(pid), time.perf_counter()
                stub.RetrieveContext(retrieve_request(f"{q} ({size} {mode})", mode, 5), timeout=60)
                spent.append((time.perf_counter() - t0) * 1000)
                cpu[mode] += cpu_seconds(pid) - c0
        figures = {}
        for mode, spent in times.items():
            spent.sort()
            figures[mode] = (statistics.median(spent), spent[min(len(spent) - 1, int(0.99 * len(spent)))])
        repeated = []  # the same query again: answered by the result cache
        for _ in range(200):
            t0 = time.perf_counter()
            stub.RetrieveContext(retrieve_request(queries[0], "hybrid", 5), timeout=60)
            repeated.append((time.perf_counter() - t0) * 1000)
        after = rss_mib(pid)
    print(f"| {size:,} | {build} | {du_mib(data_dir):.0f} | {at_rest:.0f} / {after:.0f} | "
          f"{figures['hybrid'][0]:.1f} / {figures['hybrid'][1]:.1f} | "
          f"{figures['dense'][0]:.1f} / {figures['dense'][1]:.1f} | "
          f"{figures['hybrid'][0] / figures['dense'][0]:.2f} | {cpu['hybrid'] * 1000 / len(queries):.1f} / "
          f"{cpu['dense'] * 1000 / len(queries):.1f} ({cpu['hybrid'] / cpu['dense']:.2f}) | "
          f"{statistics.median(repeated):.2f} |", flush=True)


def replicas(data_dir: Path, queries: list[str], total: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copies = [Path(tmp) / f"replica-{i}" for i in (0, 1)]
        for copy in copies:
            shutil.copytree(data_dir, copy)
        texts = [f"{q} (replicas {i})" for i, q in enumerate((queries * 4)[: total * 2])]
        with serve(copies[0]) as (one, _):
            single = asyncio.run(load([one], texts[:total], 64))
        with serve(copies[0]) as (first, _), serve(copies[1]) as (second, _):
            double = asyncio.run(load([first, second], texts[total:], 64))
    print(f"64 clients, hybrid: one replica {single:.1f} q/s, two replicas {double:.1f} q/s "
          f"({double / single:.2f}x; {total} queries each)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma list of collection sizes (chunks)")
    parser.add_argument("--queries", type=int, default=200, help="queries per mode and size")
    parser.add_argument("--replicas", action="store_true", help="also one vs two replicas, 64 clients")
    args = parser.parse_args()
    queries = list(scifact.load().queries.values())
    seed = seed_points(seed_dir())
    identity = shared_embedder(eval_settings(Path("."))).identity
    print(f"seed: {len(seed)} real SciFact chunks", flush=True)
    print("| chunks | store build | disk MiB | RSS MiB at rest / after queries | hybrid p50 / p99 ms | "
          "dense p50 / p99 ms | default / dense p50 | server CPU ms per query, default / dense (ratio) | "
          "cache hit p50 ms |\n" + "| --- " * 9 + "|", flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    for size in sizes:
        size_figures(size, seed, identity, queries[: args.queries])
    if args.replicas:
        replicas(synthesise(min(sizes), seed, identity), queries, 600)


if __name__ == "__main__":
    main()
