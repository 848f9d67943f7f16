"""RetrieveContext latency of two Freki trees side by side (A/B), on the same SciFact sample.

Starts ``freki serve`` from each tree (``--a`` and ``--b``, default: this one for both), indexes the same
``--docs`` SciFact abstracts into each, then sends the same test queries, alternating A and B query by query
(so load on the box hits both alike), one client, default retrieval mode, top 10. Prints p50/p95/p99.

    git worktree add /tmp/main-tree main
    .venv/bin/python scripts/bench_retrieve_ab.py --a /tmp/main-tree --b .
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]

from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "eval" / "scifact"


def start(tree: Path, data: Path) -> tuple[subprocess.Popen[str], freki_pb2_grpc.FrekiServiceStub]:
    config = data / "freki.json"
    data.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"data_dir": str(data / "data")}))
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'protos'}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "freki.cli", "serve", "--config", str(config), "--port", "0"],
                            cwd=tree, env=env, stdout=subprocess.PIPE, stderr=open(data / "freki.log", "w"), text=True)
    assert proc.stdout is not None
    address = proc.stdout.readline().rsplit(" ", 1)[-1].strip()
    return proc, freki_pb2_grpc.FrekiServiceStub(grpc.insecure_channel(address))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", type=Path, default=ROOT)
    parser.add_argument("--b", type=Path, default=ROOT)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)
    corpus = [json.loads(line) for line in open(SCIFACT / "corpus.jsonl")]
    docs = rng.sample(corpus, args.docs)
    queries = [json.loads(line)["text"] for line in open(SCIFACT / "queries.jsonl")][: args.queries]
    work = Path(tempfile.mkdtemp(prefix="freki-ab-"))
    servers = {name: start(tree.resolve(), work / name) for name, tree in (("A", args.a), ("B", args.b))}
    for name, (_, stub) in servers.items():
        started = time.perf_counter()
        for doc in docs:
            stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id=doc["_id"], document_id=doc["_id"], content=f"{doc['title']}\n\n{doc['text']}"), timeout=120)
        print(f"{name}: indexed {len(docs)} docs in {time.perf_counter() - started:.0f} s")
    times: dict[str, list[float]] = {"A": [], "B": []}
    for round_ in range(2):  # the first round warms the query caches' code paths; only the second counts
        for query in queries:
            for name in (("A", "B") if rng.random() < 0.5 else ("B", "A")):
                request = common_pb2.WolfRequest(request_id="q", model_type=common_pb2.RAG, prompt=f"{query} {round_}",
                                                 retrieval=common_pb2.RetrievalOptions(top_k=10))
                started = time.perf_counter()
                servers[name][1].RetrieveContext(request, timeout=30)
                if round_:
                    times[name].append((time.perf_counter() - started) * 1000)
    for name, values in times.items():
        cuts = statistics.quantiles(values, n=100)
        print(f"{name} ({getattr(args, name.lower())}): RetrieveContext p50 {cuts[49]:.1f} ms, p95 {cuts[94]:.1f} ms, "
              f"p99 {cuts[98]:.1f} ms over {len(values)} queries; load {os.getloadavg()}")
    for proc, _ in servers.values():
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
