"""Tenant A's indexing against tenant B's query latency, on a real ``freki serve`` (issues 32 and 35).

Tenant B indexes a few ordinary documents, then asks questions one after another: first alone (baseline),
then while tenant A keeps indexing; A's documents per second are measured alone (no queries) and beside B's
queries, which come one after another or every ``--query-interval-ms``. ``--workload folder`` (default): A's
senders index a large folder of ordinary documents (generated prose, ~``--doc-words`` words each), document
after document. ``--workload hostile``: A sends a 4.9-million-character "word" and one sentence repeated
70,000 times, each with a ``--deadline`` (the server must stop soon after it). Prints B's query p50 / p95 /
p99 / max in both phases, their ratio (goal: p50 at most 2x), how A's calls ended and A's documents per
second, the server's CPU time in each phase and the load average. The server runs in its own process;
traffic goes to 127.0.0.1 only.

    .venv/bin/python -m scripts.bench.tenant_interference                    # 60 s per phase
    .venv/bin/python -m scripts.bench.tenant_interference --seconds 20 --senders 1 --workload hostile
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import grpc
import psutil
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.settings import FrekiSettings
from scripts.services import freki_process

HOSTILE = ["a" * 4_900_000, "The quick brown fox jumps over the lazy dog near the river bank. " * 70_000]
B_DOCS = [f"Agency B note {i}: the flat on floor {i % 5} has {i % 3 + 1} bedrooms, rent {700 + 25 * i} euros, "
          f"heating by {'gas' if i % 2 else 'district heat'}; viewing on request." for i in range(40)]
WORDS = ("tenant lease heating boiler invoice repair window roof tenancy deposit meter garden staircase "
         "landlord notice contract clause agency viewing balcony cellar parking insurance damage water "
         "electricity inspection handover keys kitchen bathroom floor rent increase agreement").split()


def folder_document(seed: int, words: int) -> str:
    """One ordinary document of about ``words`` words: paragraphs of plain sentences (deterministic)."""
    rng = random.Random(seed)
    paragraphs, count = [], 0
    while count < words:
        sentences = []
        for _ in range(rng.randint(3, 7)):
            sentence = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
            sentences.append(" ".join(sentence).capitalize() + ".")
            count += len(sentence)
        paragraphs.append(" ".join(sentences))
    return f"Document {seed}\n\n" + "\n\n".join(paragraphs)


QUESTIONS = ["Which flat has three bedrooms?", "How is the flat heated?", "What is the rent on floor 2?",
             "Can I view the flat?", "Which flats have district heating?"]


def ask(stub: freki_pb2_grpc.FrekiServiceStub, question: str) -> float:
    started = time.perf_counter()
    stub.RetrieveContext(common_pb2.WolfRequest(request_id=str(uuid.uuid4()), model_type=common_pb2.RAG,
                                                prompt=question, tenant_id="agency-b",
                                                retrieval=common_pb2.RetrievalOptions(top_k=5)), timeout=30)
    return (time.perf_counter() - started) * 1000


def queries(stub: freki_pb2_grpc.FrekiServiceStub, seconds: float, interval_ms: float = 0.0) -> list[float]:
    """B's query latencies (ms) for ``seconds``: one query after another, at most one per ``interval_ms``."""
    times: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        # Never the same text twice: every query is embedded (no query-cache hits).
        times.append(ask(stub, f"{QUESTIONS[len(times) % len(QUESTIONS)]} ({uuid.uuid4().hex[:6]})"))
        time.sleep(max(0.0, interval_ms / 1000 - (time.monotonic() - started)))
    return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"n": len(times), "p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
            "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 1), "max_ms": round(ordered[-1], 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each phase")
    parser.add_argument("--workload", choices=("folder", "hostile"), default="folder", help="what tenant A indexes")
    parser.add_argument("--doc-words", type=int, default=3000, help="words per document of the folder workload")
    parser.add_argument("--senders", type=int, default=2, help="tenant A's concurrent senders")
    parser.add_argument("--query-interval-ms", type=float, default=0.0,
                        help="B asks at most one question per this many ms (0: one after another)")
    parser.add_argument("--deadline", type=float, default=30.0, help="deadline of each of A's IndexDocument calls")
    parser.add_argument("--config", default="{}", help="extra Freki settings as JSON")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="freki-interference-"))
    settings = FrekiSettings.model_validate({"data_dir": str(data_dir / "data"),
                                             "retrieval": {"result_cache_bytes": 0}, **json.loads(args.config)})
    server, pids = contextlib.ExitStack(), list[int]()
    address = server.enter_context(freki_process(settings, title="Freki (interference)", pid=pids))
    process = psutil.Process(pids[0])
    try:
        stub = freki_pb2_grpc.FrekiServiceStub(grpc.insecure_channel(address, options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024)]))
        for i, text in enumerate(B_DOCS):
            stub.IndexDocument(freki_pb2.IndexDocumentRequest(request_id=str(uuid.uuid4()), tenant_id="agency-b",
                                                              document_id=f"b-{i}", content=text,
                                                              content_type="text"), timeout=120)
        queries(stub, 5)  # warm-up
        cpu = process.cpu_times()
        alone = queries(stub, args.seconds, args.query_interval_ms)
        cpu_alone = sum(process.cpu_times()[:2]) - sum(cpu[:2])

        stop, outcomes = threading.Event(), Counter[str]()

        def send(sender: int) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                text = (folder_document(sender * 100_000 + n, args.doc_words) if args.workload == "folder"
                        else HOSTILE[(sender + n) % len(HOSTILE)])
                try:
                    stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                        request_id=str(uuid.uuid4()), tenant_id="agency-a", document_id=f"a-{sender}-{n}",
                        content=text, content_type="text"), timeout=args.deadline)
                    outcomes["OK"] += 1
                except grpc.RpcError as exc:
                    outcomes[exc.code().name] += 1

        senders = [threading.Thread(target=send, args=(s,), daemon=True) for s in range(args.senders)]
        for thread in senders:
            thread.start()
        time.sleep(2)  # A's documents are being worked on
        done_before = outcomes["OK"]
        time.sleep(args.seconds / 2)
        a_alone_docs_per_s = (outcomes["OK"] - done_before) / (args.seconds / 2)
        cpu, done_before = process.cpu_times(), outcomes["OK"]
        loaded = queries(stub, args.seconds, args.query_interval_ms)
        cpu_loaded = sum(process.cpu_times()[:2]) - sum(cpu[:2])
        a_docs_per_s = (outcomes["OK"] - done_before) / args.seconds
        stop.set()
        for thread in senders:
            thread.join(args.deadline + 30)
        before, during = summary(alone), summary(loaded)
        print(json.dumps({"alone": {**before, "server_cpu_s": round(cpu_alone, 1)},
                          "with_tenant_a": {**during, "server_cpu_s": round(cpu_loaded, 1)},
                          "p50_ratio": round(during["p50_ms"] / before["p50_ms"], 2),
                          "tenant_a_calls": dict(outcomes),
                          "tenant_a_docs_per_s": {"alone": round(a_alone_docs_per_s, 2),
                                                  "with_queries": round(a_docs_per_s, 2)},
                          "query_interval_ms": args.query_interval_ms,
                          "workload": args.workload, "seconds": args.seconds, "senders": args.senders,
                          "deadline_s": args.deadline, "config": args.config,
                          "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=2))
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
