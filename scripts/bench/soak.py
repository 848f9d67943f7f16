"""Soak: minutes of concurrent index / update / delete / query churn on one tenant of a real ``freki serve``.

Prints, every ``--every`` seconds: calls and errors per operation, p50/p99 latency, and the RSS of the
server process and of its parser workers; at the end a summary with RSS after warm-up vs at the end
(goal: flat, at most +5 %) and every error seen. Traffic goes to 127.0.0.1 only; the run stops by itself.

    .venv/bin/python -m scripts.bench.soak --minutes 10            # the full soak
    .venv/bin/python -m scripts.bench.soak --minutes 1 --every 10   # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import grpc
import psutil
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.settings import FrekiSettings
from scripts.services import freki_process

WORDS = ("harbour tide gauge lantern reef keeper ledger storm barometer current shoal buoy pilot channel "
         "anchor beacon chart compass depth drift ebb flood gale hull keel mast rigging sail squall").split()


def document(rng: random.Random, doc: int, revision: int) -> str:
    """A Markdown document of 6-20 paragraphs; most paragraphs survive a revision (incremental updates)."""
    paragraphs = []
    for i in range(rng.randint(6, 20)):
        local = random.Random(f"{doc}-{i}-{revision if rng.random() < 0.2 else 0}")
        words = " ".join(local.choice(WORDS) for _ in range(local.randint(25, 60)))
        paragraphs.append(f"Paragraph {i} of log {doc}: {words}.")
    return f"---\ntitle: Log {doc}\nrevision: {revision}\n---\n# Log {doc}\n\n" + "\n\n".join(paragraphs)


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, list[str]] = defaultdict(list)
        self.total_errors: list[str] = []

    def record(self, op: str, seconds: float, error: str | None) -> None:
        with self.lock:
            self.latency[op].append(seconds)
            if error:
                self.errors[op].append(error)
                self.total_errors.append(f"{op}: {error}")

    def take(self) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
        with self.lock:
            taken = (dict(self.latency), dict(self.errors))
            self.latency, self.errors = defaultdict(list), defaultdict(list)
        return taken


def rss_mb(process: psutil.Process) -> tuple[float, float, float]:
    """(server RSS, of which anonymous memory, parser workers' RSS) in MiB.

    The anonymous part is what the process allocated; the rest is file pages mapped in (libraries, the model,
    the engine's segment and WAL files), which the kernel can drop and which purges touch in bulk."""
    try:
        children = sum(c.memory_info().rss for c in process.children(recursive=True))
        anon = 0.0
        status = Path(f"/proc/{process.pid}/status")
        if status.exists():
            anon = next((int(line.split()[1]) / 1024 for line in status.read_text().splitlines()
                         if line.startswith("RssAnon:")), 0.0)
        return process.memory_info().rss / 2**20, anon, children / 2**20
    except psutil.Error:
        return 0.0, 0.0, 0.0


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile in milliseconds."""
    if len(values) < 2:
        return values[0] * 1000 if values else 0.0
    return statistics.quantiles(values, n=100)[int(q) - 1] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between report lines")
    parser.add_argument("--docs", type=int, default=60, help="document ids the churn cycles through")
    parser.add_argument("--warmup", type=float, default=120.0, help="seconds before RSS counts as warmed up")
    parser.add_argument("--config", help="extra Freki settings as JSON")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="freki-soak-"))
    settings = FrekiSettings.model_validate({"data_dir": str(data_dir / "data"), **json.loads(args.config or "{}")})
    server = contextlib.ExitStack()
    pids: list[int] = []
    address = server.enter_context(freki_process(settings, title="Freki (soak)", pid=pids))
    process = psutil.Process(pids[0])
    channel = grpc.insecure_channel(address)
    stub = freki_pb2_grpc.FrekiServiceStub(channel)
    stats, stop = Stats(), threading.Event()
    revisions = [0] * args.docs

    def call(op: str, method, request, timeout: float) -> None:  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        error = None
        try:
            method(request, timeout=timeout)
        except grpc.RpcError as exc:
            if not (op == "delete" and exc.code() == grpc.StatusCode.NOT_FOUND):
                error = f"{exc.code().name}: {exc.details()[:200]}"
        stats.record(op, time.perf_counter() - started, error)

    def indexer(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            doc = rng.randrange(args.docs)
            revisions[doc] += 1
            text = document(rng, doc, revisions[doc])
            call("index", stub.IndexDocument, freki_pb2.IndexDocumentRequest(
                request_id=f"i{seed}", document_id=f"log-{doc}", content=text, source=f"log-{doc}.md"), 120)

    def deleter(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.wait(rng.uniform(1.0, 3.0)):
            doc = rng.randrange(args.docs)
            call("delete", stub.DeleteDocument, freki_pb2.DeleteDocumentRequest(
                request_id=f"d{seed}", document_id=f"log-{doc}"), 120)

    def querier(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
            mode = rng.choice([common_pb2.SEARCH_MODE_HYBRID, common_pb2.SEARCH_MODE_DENSE])
            call("query", stub.RetrieveContext, common_pb2.WolfRequest(
                request_id=f"q{seed}", model_type=common_pb2.RAG, prompt=prompt,
                retrieval=common_pb2.RetrievalOptions(top_k=5, mode=mode)), 30)
            stop.wait(0.05)

    def lister() -> None:
        while not stop.wait(2.0):
            call("list", stub.ListDocuments, freki_pb2.ListDocumentsRequest(page_size=200), 30)

    threads = [threading.Thread(target=indexer, args=(i,)) for i in range(2)]
    threads += [threading.Thread(target=deleter, args=(10,)), threading.Thread(target=lister)]
    threads += [threading.Thread(target=querier, args=(20 + i,)) for i in range(4)]
    for t in threads:
        t.start()
    print(f"soak: {args.minutes:g} min on {address}, data {data_dir}; load {os.getloadavg()}")
    print(f"{'t(s)':>6} {'op':>6} {'calls':>6} {'err':>4} {'p50 ms':>8} {'p99 ms':>8}  RSS (anon) / workers MiB")
    started, rows, samples = time.monotonic(), [], []
    end = started + args.minutes * 60
    try:
        while time.monotonic() < end:
            time.sleep(min(args.every, max(0.0, end - time.monotonic())))
            elapsed = time.monotonic() - started
            latency, errors = stats.take()
            server_rss, anon_rss, worker_rss = rss_mb(process)
            samples.append((elapsed, server_rss, worker_rss, anon_rss))
            for op in sorted(latency):
                row = {"t": round(elapsed), "op": op, "calls": len(latency[op]), "errors": len(errors.get(op, [])),
                       "p50_ms": round(percentile(latency[op], 50), 1), "p99_ms": round(percentile(latency[op], 99), 1),
                       "rss_mb": round(server_rss), "anon_mb": round(anon_rss), "workers_mb": round(worker_rss)}
                rows.append(row)
                print(f"{row['t']:>6} {op:>6} {row['calls']:>6} {row['errors']:>4} {row['p50_ms']:>8} "
                      f"{row['p99_ms']:>8}   {server_rss:7.0f} ({anon_rss:.0f} anon) / {worker_rss:.0f}")
    finally:
        stop.set()
        for t in threads:
            t.join(150)
        status = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        channel.close()
        server.close()
    warm = [s for s in samples if s[0] >= args.warmup] or samples
    growth = (warm[-1][1] / warm[0][1] - 1) * 100 if warm and warm[0][1] else 0.0
    summary = {"minutes": args.minutes, "errors": len(stats.total_errors), "first_errors": stats.total_errors[:10],
               "rss_after_warmup_mb": round(warm[0][1]), "rss_end_mb": round(warm[-1][1]),
               "rss_peak_mb": round(max(s[1] for s in samples)), "rss_growth_after_warmup_pct": round(growth, 1),
               "anon_after_warmup_mb": round(warm[0][3]), "anon_end_mb": round(warm[-1][3]),
               "anon_growth_after_warmup_pct": round((warm[-1][3] / warm[0][3] - 1) * 100, 1) if warm[0][3] else None,
               "documents_at_end": status.document_count, "chunks_at_end": status.chunk_count,
               "load_at_end": os.getloadavg()}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "rows": rows, "rss": samples}, indent=2))
    return 0 if not stats.total_errors else 1


if __name__ == "__main__":
    sys.exit(main())
