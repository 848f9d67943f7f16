"""Freki speed through its gRPC API: index throughput, RetrieveContext latency and concurrency, vs txtai.

Prints figures; asserts nothing. Sections:

0. Encoders: the bare model under torch (``SentenceTransformer.encode``), ONNX Runtime (Freki's
   default, freki/embed/encoders.py) and the bf16 runner Freki uses for indexing batches: cosine to
   torch, batch throughput, one-query latency (``scripts.bench.encoders``, also runnable alone).
1. Index throughput: N SciFact abstracts (cut to ~80 words, one chunk each) through IndexDocument with 8
   concurrent clients (``freki serve`` in its own process, as in sections 3 and 4), in chunks/s,
   next to raw ``SentenceTransformer.encode`` on the same chunk
   texts, and next to the raw ONNX encoder (the ceiling of the engine Freki runs).
2. RetrieveContext p50/p99 (single client, query embedding included: every query text is new, so
   the LRU cache never answers) at 10k and 100k chunks, dense and hybrid. The collections are
   synthesised from real indexed SciFact chunks (see ``scripts.bench.synthetic``): embedding 100k real chunks
   takes hours on this box. Query texts are real SciFact claims.
3. Throughput with 1, 8 and 64 concurrent clients (distinct queries), queries/s, against ``freki serve``
   running in its own process as deployed.
4. Side by side with txtai (same packaged MiniLM model, hybrid = dense + BM25; txtai is a library, so
   in this process) on a SciFact subset
   (all documents judged for the test claims + random others): index wall time, query p50,
   nDCG@10, and Freki's figures as ratios to txtai's.

    python -m scripts.bench.freki            # ~15-25 min on a busy 2-core box
    python -m scripts.bench.freki --quick    # a few minutes: small N, 10k only, small txtai subset
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from scripts.bench.encoders import bench_encoders, one_chunk_texts, raw_encoders
from scripts.bench.synthetic import complete_seed_dir, seed_points, synthesise
from scripts.bench.vs_txtai import side_by_side
from scripts.common import cpu_seconds
from scripts.evalsets import scifact
from scripts.evalsets.harness import (
    CACHE,
    data_dir_for,
    eval_settings,
    index_corpus,
    retrieve,
    retrieve_request,
    running_freki,
    shared_embedder,
)
from scripts.services import freki_process


def bench_indexing(n: int) -> tuple[float, float]:
    texts = one_chunk_texts(n)
    import grpc
    from wolf.v1 import freki_pb2_grpc

    with (tempfile.TemporaryDirectory() as tmp, freki_process(eval_settings(Path(tmp))) as target,
          grpc.insecure_channel(target) as channel):
        started = time.perf_counter()
        stats = index_corpus(freki_pb2_grpc.FrekiServiceStub(channel), texts, Path(tmp), workers=8, log_every=10**9)
        freki_s = time.perf_counter() - started
        stream_s = _index_streamed(target, texts)
    chunks = stats["chunks"]
    freki_rate = chunks / freki_s
    print(f"index: {len(texts)} docs -> {chunks:.0f} chunks in {freki_s:.1f} s = {freki_rate:.1f} chunks/s via "
          f"IndexDocument (8 clients, {shared_embedder(eval_settings(Path('.'))).backend} encoder)", flush=True)
    print(f"index: the same docs again, as new ids, over one IndexDocuments stream: {stream_s:.1f} s = "
          f"{chunks / stream_s:.1f} chunks/s", flush=True)
    raw_rate = 0.0
    for name, encoder in raw_encoders().items():
        started = time.perf_counter()
        encoder.encode(list(texts.values()), batch_size=32)
        rate = len(texts) / (time.perf_counter() - started)
        raw_rate = raw_rate or rate  # the first is sentence-transformers' own model.encode
        print(f"  raw {name} encode of the same texts: {rate:.1f} texts/s; Freki / raw = {freki_rate / rate:.2f}",
              flush=True)
    return freki_rate, raw_rate


def _index_streamed(target: str, texts: dict[str, str]) -> float:
    """Seconds to index ``texts`` (under fresh ids) over one IndexDocuments stream."""
    import grpc
    from wolf.v1 import freki_pb2, freki_pb2_grpc

    requests = (freki_pb2.IndexDocumentRequest(request_id=uuid.uuid4().hex, document_id=f"stream/{d}", content=t)
                for d, t in texts.items())
    with grpc.insecure_channel(target) as channel:
        started = time.perf_counter()
        results = list(freki_pb2_grpc.FrekiServiceStub(channel).IndexDocuments(requests, timeout=3600))
        elapsed = time.perf_counter() - started
    failed = [r.error_code for r in results if r.error_code]
    if failed:
        print(f"  {len(failed)} documents refused over the stream: {failed[:3]}", flush=True)
    return elapsed


def latency(data_dir: Path, queries: list[str], label: str) -> None:
    with running_freki(eval_settings(data_dir)) as stub:
        retrieve(stub, "warm up the model and the store", "dense", 5)
        for mode in ("dense", "hybrid"):
            times = []
            for q in queries:
                started = time.perf_counter()
                retrieve(stub, f"{q} ({label} {mode})", mode, 5)  # a new text: the LRU cache never answers
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
            print(f"RetrieveContext {label} {mode:6s}: p50 {statistics.median(times):.1f} ms, p99 {p99:.1f} ms "
                  f"({len(times)} queries, 1 client)", flush=True)


def encoder_ceiling(queries: list[str], threads: int) -> tuple[float, float]:
    """Queries/s of the query encoder alone with ``threads`` callers, and its CPU time per query (this
    process's, all threads): the server's embedder (same model, runner and micro-batching settings) in this
    process, each caller embedding distinct texts.

    With 64 callers this is the encoder-bound ceiling of ``concurrency``: what the server could serve if
    everything else a RetrieveContext does (gRPC, search, fusion) cost nothing and no load client shared
    the cores.
    """
    import threading

    from freki.engine.config import build_embedder

    settings = eval_settings(Path("."))
    embedder = build_embedder(settings)
    embedder.enable_batching(settings.retrieval.query_batch_max, settings.retrieval.query_batch_wait_ms / 1000)
    embedder.embed_query("warm up the encoder")
    pending = iter(queries)
    lock = threading.Lock()

    def caller() -> None:
        while True:
            with lock:
                text = next(pending, None)
            if text is None:
                return
            embedder.embed_query(text)

    workers = [threading.Thread(target=caller) for _ in range(threads)]
    cpu, started = time.process_time(), time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return len(queries) / (time.perf_counter() - started), (time.process_time() - cpu) / len(queries)


def concurrency(data_dir: Path, queries: list[str], levels: list[int], total: int
                ) -> tuple[dict[int, float], dict[int, tuple[float, float]]]:
    """Hybrid queries/s with ``clients`` calls in flight, against ``freki serve`` in its own process.

    The load comes from asyncio tasks on one channel in this process (one task = one client with
    one call in flight), each sending distinct query texts so the LRU cache never answers. Also prints the
    CPU time per query of the server and of this load client, and the CPU-bound ceiling they imply: the
    cores of the box divided by the CPU time one query costs at one client (server + client).
    """
    import asyncio

    import grpc
    from wolf.v1 import freki_pb2_grpc

    results: dict[int, float] = {}
    costs: dict[int, tuple[float, float]] = {}  # clients -> CPU seconds per query (server, load client)
    pids: list[int] = []
    cores = len(os.sched_getaffinity(0))
    with freki_process(eval_settings(data_dir), pid=pids) as target:

        async def run(clients: int, texts: list[str]) -> tuple[float, float, float]:
            async with grpc.aio.insecure_channel(target) as channel:
                stub = freki_pb2_grpc.FrekiServiceStub(channel)
                await stub.RetrieveContext(retrieve_request("warm up", "hybrid", 5), timeout=60)
                pending = iter(texts)

                async def client() -> None:
                    for text in pending:
                        await stub.RetrieveContext(retrieve_request(text, "hybrid", 5), timeout=60)

                server0, client0, started = cpu_seconds(pids[0]), time.process_time(), time.perf_counter()
                await asyncio.gather(*(client() for _ in range(clients)))
                wall = time.perf_counter() - started
                return (len(texts) / wall, (cpu_seconds(pids[0]) - server0) / len(texts),
                        (time.process_time() - client0) / len(texts))

        ceiling = 0.0
        for n, clients in enumerate(levels):
            texts = [f"{q} ({n})" for q in queries[:total]]  # new texts for every level
            results[clients], server_cpu, client_cpu = asyncio.run(run(clients, texts))
            costs[clients] = (server_cpu, client_cpu)
            if n == 0:
                ceiling = cores / (server_cpu + client_cpu)
            print(f"throughput hybrid, {clients:2d} concurrent clients: {results[clients]:.1f} queries/s "
                  f"({total} queries, server in its own process); CPU per query: server {server_cpu * 1000:.1f} ms, "
                  f"load client {client_cpu * 1000:.1f} ms; server used {results[clients] * server_cpu:.2f} cores",
                  flush=True)
        print(f"CPU-bound ceiling ({cores} cores / CPU per query at {levels[0]} client): {ceiling:.1f} queries/s; "
              f"{levels[-1]} clients reach {results[levels[-1]] / ceiling:.2f} of it", flush=True)
    return results, costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes; skips the 100k collection")
    parser.add_argument("--skip", default="",
                        help="comma list of sections to skip: encoders,index,latency,concurrency,txtai")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    n_index, sizes, n_lat, n_sub = (200, [10_000], 100, 300) if args.quick else (1000, [10_000, 100_000], 300, 1000)
    es = scifact.load()
    queries = list(es.queries.values())
    if "encoders" not in skip:
        passages = list(one_chunk_texts(n_index).values())
        bench_encoders(passages[:256], queries[:100])
    if "index" not in skip:
        bench_indexing(n_index)
    seed_dir = complete_seed_dir(data_dir_for("scifact", es.corpus, eval_settings(Path("."))))
    if seed_dir is None:
        print(f"no indexed SciFact cache under {CACHE}; run python -m scripts.eval.retrieval --sets scifact first")
        skip |= {"latency", "concurrency"}
    if seed_dir is not None and ("latency" not in skip or "concurrency" not in skip):
        seed = seed_points(seed_dir)
        identity = shared_embedder(eval_settings(Path("."))).identity
        print(f"seed: {len(seed)} real SciFact chunks", flush=True)
        # The concurrency section serves the 10k collection only: building 100k for it alone takes minutes.
        needed = sizes if "latency" not in skip else [10_000]
        dirs = {size: synthesise(size, seed, identity) for size in needed}
        if "latency" not in skip:
            for size, d in dirs.items():
                latency(d, queries[:n_lat], f"{size // 1000}k")
        if "concurrency" not in skip:
            total = 200 if args.quick else 600
            qps, costs = concurrency(dirs[10_000], queries[n_lat:], [1, 8, 64], total)
            # Also with as many callers as the server has request threads: it never has more queries in flight,
            # so its passes are never fuller than that (the encoder's CPU per query falls with pass size).
            workers = eval_settings(Path(".")).max_workers
            alone = {n: encoder_ceiling([f"{q} (encoder {n})" for q in queries[n_lat:][:total]], n)
                     for n in sorted({1, workers, 64})}
            print(f"query encoder alone, micro-batched as in the server: {alone[1][0]:.1f} queries/s with 1 caller "
                  f"({alone[1][1] * 1000:.1f} ms CPU per query), "
                  f"{alone[workers][0]:.1f} with {workers} (= max_workers; "
                  f"{alone[workers][1] * 1000:.1f} ms), {alone[64][0]:.1f} with 64 "
                  f"({alone[64][1] * 1000:.1f} ms CPU per query; the encoder-bound ceiling)", flush=True)
            server, client = costs[64]
            # The load client runs on the same cores: what the server alone would serve on them is the measured
            # rate scaled by (server + client) / server CPU (both cores busy either way). Both ratios are printed;
            # the target is stated against the first.
            print(f"64 clients vs 1: {qps[64] / qps[1]:.2f}x; 64 clients vs the ceiling: {qps[64] / alone[64][0]:.2f} "
                  f"as measured, {qps[64] * (server + client) / server / alone[64][0]:.2f} with the load client's "
                  f"{client * 1000:.1f} ms CPU per query taken off the server's cores; the server spends "
                  f"{(server - alone[64][1]) * 1000:.1f} ms CPU per query besides what the encoder alone spends",
                  flush=True)
    if "txtai" not in skip:
        side_by_side(n_sub)


if __name__ == "__main__":
    main()
