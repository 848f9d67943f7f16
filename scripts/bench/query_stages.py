"""Where a RetrieveContext's server CPU goes, stage by stage, under concurrent load.

Prints figures; asserts nothing. A Freki server runs in this process on the synthesised 10k collection
(``scripts.bench.synthetic.synthesise``; build it with ``python -m scripts.bench.freki`` or ``python -m
scripts.bench.scale`` first), with every stage of the query path wrapped to add up its *exclusive* CPU time on the
calling thread (``time.thread_time``: load from other work on the box does not inflate it the way it inflates wall
time). The load comes from another process (``--client``: asyncio clients on one channel, distinct query texts, so
neither the result cache nor the query-embedding LRU answers). Per level it prints queries/s, the process's CPU per
query (all threads, from /proc), the load client's, and the stages. What no stage covers is gRPC's own work (its C
core and the Python around the handler) and the encoder's worker threads (ONNX Runtime's intra-op pool, the bulk
runner's workers): the process figure minus the stages. Then the embedding passes: how many, how full, what share
of the loaded span a pass was running (near 100 %: the passes are the bottleneck), and the RetrieveContext calls in
flight (at ``--max-workers``: every request thread busy).

    .venv/bin/python -m scripts.bench.query_stages --clients 1,64 --queries 600 [--mode dense] [--max-workers 64]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from scripts.bench.synthetic import synth_dir
from scripts.common import REPO, cpu_seconds, proc_stat, stat_cpu_seconds
from scripts.evalsets import scifact
from scripts.evalsets.harness import eval_settings, retrieve_request

SPENT: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()
_STACK = threading.local()
PASSES: list[tuple[float, float, int]] = []  # (start, end, texts) of every embedding pass
IN_FLIGHT = [0]  # RetrieveContext calls in the servicer now
_FLIGHT_LOCK = threading.Lock()


def account(owner: Any, name: str, label: str) -> None:
    """Wrap ``owner.name`` so its exclusive thread CPU (children's time taken out) adds up under ``label``."""
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        stack = _STACK.__dict__.setdefault("stack", [])
        started = time.thread_time()
        stack.append(0.0)
        try:
            return fn(*args, **kwargs)
        finally:
            spent = time.thread_time() - started
            SPENT[label] += spent - stack.pop()
            CALLS[label] += 1
            if stack:
                stack[-1] += spent

    setattr(owner, name, timed)


def time_passes(batcher: Any) -> None:
    """Record each ``QueryBatcher`` pass's wall span and size (is the encoder the bottleneck, how full are passes)."""
    run = batcher._run

    def timed(self: Any, batch: list[Any]) -> None:
        started = time.perf_counter()
        try:
            run(self, batch)
        finally:
            PASSES.append((started, time.perf_counter(), sum(len(p.texts) for p in batch)))

    batcher._run = timed


def count_in_flight(servicer: Any) -> None:
    handler = servicer.RetrieveContext

    def counted(self: Any, request: Any, context: Any) -> Any:
        with _FLIGHT_LOCK:
            IN_FLIGHT[0] += 1
        try:
            return handler(self, request, context)
        finally:
            with _FLIGHT_LOCK:
                IN_FLIGHT[0] -= 1

    servicer.RetrieveContext = counted


def sample_in_flight(samples: list[int], stop: threading.Event) -> None:
    while not stop.wait(0.002):
        samples.append(IN_FLIGHT[0])


def pass_report(samples: list[int]) -> str:
    """Passes, their mean size, the share of the loaded span a pass was running, median calls in flight."""
    if not PASSES:
        return "no embedding passes (every query vector came from the LRU)"
    span = PASSES[-1][1] - PASSES[0][0]
    busy = sum(end - start for start, end, _ in PASSES)
    loaded = [n for n in samples if n] or [0]
    return (f"{len(PASSES)} passes of {sum(n for *_, n in PASSES) / len(PASSES):.1f} texts on average; a pass was "
            f"running {busy / span:.0%} of the loaded span; calls in flight (median while loaded) "
            f"{sorted(loaded)[len(loaded) // 2]}")


def instrument() -> None:
    import freki.api.convert as convert
    import freki.api.validation as validation
    import wolf_service.auth as auth
    import wolf_service.error_mapping as error_mapping
    import wolf_service.logs as logs
    import wolf_service.metrics as metrics
    from freki.api.servicer import FrekiServicer
    from freki.embed import encoders, runners
    from freki.embed.embedder import Embedder
    from freki.embed.query_batching import QueryBatcher
    from freki.embed.sparse import SparseEncoder
    from freki.engine import FrekiEngine
    from freki.search.retrieval import Retriever
    from freki.store.edge import EdgeStore
    from freki.store.guarded import GuardedStore
    from freki.store.sealed import SealedStore

    for owner, name, label in [
        (metrics.MetricsInterceptor, "unary", "interceptor: metrics"),
        (logs.AccessLogInterceptor, "unary", "interceptor: access log"),
        (auth.ApiKeyInterceptor, "unary", "interceptor: API keys"),
        (error_mapping.ErrorMappingInterceptor, "unary", "interceptor: error mapping"),
        (FrekiServicer, "RetrieveContext", "servicer (response message)"),
        (validation, "validate_retrieve", "validation"),
        (convert, "query_from_request", "request -> Query"),
        (convert, "rag_context", "hits -> RAGContext"),
        (FrekiEngine, "retrieve", "engine.retrieve (result cache)"),
        (Retriever, "retrieve", "retriever"),
        (Embedder, "embed_query", "query-vector LRU"),
        (QueryBatcher, "encode_many", "micro-batching hand-off"),
        (encoders.BatchedEncoder, "encode", "encoder: padding, feeds"),
        (encoders.BatchedEncoder, "_tokenize", "encoder: word-piece tokenizer"),
        (runners.OnnxRunner, "run", "encoder: ONNX Runtime (calling thread)"),
        (runners.TorchRunner, "run", "encoder: bulk runner (calling thread)"),
        (SparseEncoder, "encode_query", "BM25 query terms"),
        (SealedStore, "search_convex", "sealed store (opens payloads)"),
        (SealedStore, "search_dense", "sealed store (opens payloads)"),
        (GuardedStore, "search_convex", "store input checks"),
        (GuardedStore, "search_dense", "store input checks"),
        (EdgeStore, "_engine_search_convex", "engine search (qdrant-edge)"),
        (EdgeStore, "_engine_search_dense", "engine search (qdrant-edge)"),
    ]:
        account(owner, name, label)
    time_passes(QueryBatcher)
    count_in_flight(FrekiServicer)


def thread_groups() -> dict[str, float]:
    """CPU seconds of this process's threads so far, by kind (from /proc: every thread, Python's or not)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    groups: dict[str, float] = collections.defaultdict(float)
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            fields = proc_stat(task / "stat")
        except OSError:
            continue  # the thread ended
        name = names.get(int(task.name), "")
        kind = ("request threads (gRPC pool)" if name.startswith(("rpc_", "ThreadPoolExecutor"))
                else "gRPC's serving thread" if "_serve" in name
                else "bulk runner workers" if name.startswith("freki-")
                else "threads unknown to Python (ONNX Runtime pool, gRPC core)" if not name else "other")
        groups[kind] += stat_cpu_seconds(fields)
    return groups


def client(target: str, clients: int, texts: list[str], mode: str) -> None:
    import grpc
    from wolf.v1 import freki_pb2_grpc

    async def run() -> None:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            pending = iter(texts)

            async def one() -> None:
                for text in pending:
                    await stub.RetrieveContext(retrieve_request(text, mode, 5), timeout=60)

            cpu, started = time.process_time(), time.perf_counter()
            await asyncio.gather(*(one() for _ in range(clients)))
            print(f"{len(texts) / (time.perf_counter() - started):.1f} {(time.process_time() - cpu) / len(texts)}")

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", default="1,64", help="comma list of concurrency levels")
    parser.add_argument("--queries", type=int, default=600, help="queries per level")
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "dense"])
    parser.add_argument("--max-workers", type=int, default=32, help="the server's request threads")
    parser.add_argument("--seeds", default="*", help="the collection's seed count (synth_dir); * = any 10k one")
    parser.add_argument("--client", nargs=3, metavar=("TARGET", "CLIENTS", "TAG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    queries = list(scifact.load().queries.values())[300:]
    texts = [f"{q} (stages {args.client[2] if args.client else ''})" for q in (queries * 4)[: args.queries]]
    if args.client:
        client(args.client[0], int(args.client[1]), texts, args.mode)
        return
    found = sorted(synth_dir(10_000, args.seeds).parent.glob(synth_dir(10_000, args.seeds).name))
    if not found or not (found[0] / "complete").exists():
        sys.exit(f"no synthesised 10k collection at {synth_dir(10_000, args.seeds)}; "
                 "run python -m scripts.bench.scale --sizes 10000")
    instrument()
    from freki.api.server import build_server

    settings = eval_settings(found[0]).model_copy(update={"max_workers": args.max_workers})
    handle, engine = build_server(settings)
    def load(clients: int, tag: str, n: int) -> list[str]:
        cmd = [sys.executable, "-m", __spec__.name, "--mode", args.mode, "--queries", str(n),
               "--client", handle.address, str(clients), tag]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout.split()

    try:
        for level, clients in enumerate(int(c) for c in args.clients.split(",")):
            load(4, f"warm {level}", 40)
            SPENT.clear()
            CALLS.clear()
            PASSES.clear()
            samples: list[int] = []
            stop = threading.Event()
            sampler = threading.Thread(target=sample_in_flight, args=(samples, stop), daemon=True)
            sampler.start()
            process, threads = cpu_seconds(os.getpid()), thread_groups()
            qps, client_cpu = load(clients, str(level), args.queries)
            stop.set()
            sampler.join()
            threads = {kind: spent - threads.get(kind, 0.0) for kind, spent in thread_groups().items()}
            per_query = (cpu_seconds(os.getpid()) - process) / args.queries * 1000
            print(f"{args.mode}, {clients} clients: {float(qps):.1f} queries/s; CPU per query: server process "
                  f"{per_query:.2f} ms, load client {float(client_cpu) * 1000:.2f} ms", flush=True)
            for label, spent in SPENT.most_common():
                print(f"  {label:40s} {spent / args.queries * 1000:6.3f} ms  ({CALLS[label] / args.queries:.2f} calls)")
            staged = sum(SPENT.values()) / args.queries * 1000
            print(f"  {'(gRPC, encoder worker threads: the rest)':40s} {per_query - staged:6.3f} ms", flush=True)
            print("  by thread: " + ", ".join(f"{kind} {spent / args.queries * 1000:.2f} ms"
                                              for kind, spent in sorted(threads.items(), key=lambda kv: -kv[1])),
                  flush=True)
            print(f"  encoder: {pass_report(samples)}", flush=True)
    finally:
        handle.stop(1.0)
        engine.close()


if __name__ == "__main__":
    main()
