"""Freki against txtai on SciFact, in one run per size: index wall time, query p50, nDCG@10 and the ratios.

Both use the same packaged all-MiniLM-L6-v2 weights and hybrid (dense + BM25) search. Freki runs as deployed
(``freki serve`` in its own process, 8 indexing clients over gRPC, default settings); txtai is a library and
runs in this process. Half of each subset is documents judged for the test claims, half random others, so
nDCG@10 is meaningful at every size. Also printed: word-pieces each embeds, and txtai indexing Freki's own
chunk texts (the same embedding work). Needs the ``bench`` extra (``pip install -e .[bench]``). Prints the
CPU model and its vector extensions first: figures differ between AVX2-only and AVX-512 machines.

    .venv/bin/python -m scripts.bench.vs_txtai                  # 1,000 documents (~15 min on 2 cores)
    .venv/bin/python -m scripts.bench.vs_txtai --docs 1000 5183 # and the whole corpus (~1.5 h)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

from freki.embed.embedder import resolve_model_path
from scripts.bench.synthetic import seed_points
from scripts.common import cpu_description, tree_cpu_seconds
from scripts.evalsets import scifact
from scripts.evalsets.harness import (
    data_dir_for,
    eval_settings,
    evaluate,
    index_corpus,
    retrieve,
    run_queries,
    shared_embedder,
)
from scripts.services import freki_process


def side_by_side(n_docs: int) -> None:
    """Freki (``freki serve`` in its own process, 8 indexing clients) next to txtai in this process."""
    import grpc
    from wolf.v1 import freki_pb2_grpc

    es = scifact.load()
    qrels = es.split("test")
    judged = sorted({d for rel in qrels.values() for d in rel})
    others = [d for d in es.corpus if d not in set(judged)]
    rng = np.random.default_rng(1)
    picked = judged[: n_docs // 2] + list(rng.choice(others, max(0, n_docs - len(judged[: n_docs // 2])),
                                                      replace=False))
    corpus = {d: es.corpus[d] for d in picked}
    sub_qrels = {q: {d: g for d, g in rel.items() if d in corpus} for q, rel in qrels.items()}
    sub_qrels = {q: rel for q, rel in sub_qrels.items() if rel}
    queries = {q: es.queries[q] for q in sub_qrels}
    print(f"side by side on {len(corpus)} SciFact documents, {len(queries)} test claims", flush=True)

    data_dir = data_dir_for(f"bench-sub{len(corpus)}", corpus, eval_settings(Path(".")))
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)  # time a fresh index every run
    server: list[int] = []
    with freki_process(eval_settings(data_dir), pid=server) as target, grpc.insecure_channel(target) as channel:
        stub = freki_pb2_grpc.FrekiServiceStub(channel)
        started, cpu0, client0 = time.perf_counter(), tree_cpu_seconds(server[0]), time.process_time()
        index_corpus(stub, corpus, data_dir, workers=8, log_every=10**9)
        f_index = time.perf_counter() - started
        # CPU time says what wall time cannot on a shared box: the server's (and its parser sandboxes'), plus
        # the indexing clients'.
        f_cpu = tree_cpu_seconds(server[0]) - cpu0 + time.process_time() - client0
        f_times = []
        for q in queries.values():
            t0 = time.perf_counter()
            retrieve(stub, q, "default", 10)
            f_times.append((time.perf_counter() - t0) * 1000)
        f_ndcg = evaluate(run_queries(stub, queries, "default", 100), sub_qrels)["ndcg@10"]

    from txtai import Embeddings

    model_path = resolve_model_path("all-MiniLM-L6-v2")  # the same packaged weights Freki uses
    emb = Embeddings(path=model_path, content=True, hybrid=True)
    started, cpu0 = time.perf_counter(), time.process_time()
    emb.index([(d, t, None) for d, t in corpus.items()])
    t_index, t_cpu = time.perf_counter() - started, time.process_time() - cpu0
    t_times, runs = [], {}
    for q, text in queries.items():
        t0 = time.perf_counter()
        res = emb.search(text, 100)
        t_times.append((time.perf_counter() - t0) * 1000)
        runs[q] = [(r["id"], r["score"]) for r in res]
    t_ndcg = evaluate(runs, sub_qrels)["ndcg@10"]
    f_p50, t_p50 = statistics.median(f_times), statistics.median(t_times)

    # The same embedding work: txtai embeds each abstract once, cut at the model's 256-word-piece window;
    # Freki embeds every chunk (whole abstracts, with overlap) plus each sentence once for boundaries.
    chunk_texts = [str(p.payload.get("content", "")) for p in seed_points(data_dir)]
    tokenizer = shared_embedder(eval_settings(Path("."))).window_tokens
    words_txtai = sum(min(256, tokenizer(t)) for t in corpus.values())
    words_chunks = sum(tokenizer(t) for t in chunk_texts)
    same_work = Embeddings(path=model_path, content=True, hybrid=True)
    started, cpu0 = time.perf_counter(), time.process_time()
    same_work.index([(str(i), t, None) for i, t in enumerate(chunk_texts)])
    t_chunks, t_chunks_cpu = time.perf_counter() - started, time.process_time() - cpu0
    print(f"embedded word-pieces: txtai {words_txtai}, Freki's {len(chunk_texts)} chunks {words_chunks} "
          f"({words_chunks / words_txtai:.2f}x, before the sentence pass)", flush=True)
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print("| system | index wall s | index CPU s | query p50 ms | nDCG@10 |\n| --- | --- | --- | --- | --- |")
    print(f"| Freki (gRPC, default mode; CPU = server + clients) | {f_index:.1f} | {f_cpu:.1f} | {f_p50:.1f} | "
          f"{f_ndcg:.4f} |")
    print(f"| txtai {version('txtai')} (in-process, hybrid) | {t_index:.1f} | {t_cpu:.1f} | {t_p50:.1f} | "
          f"{t_ndcg:.4f} |")
    print(f"| txtai, indexing Freki's {len(chunk_texts)} chunk texts | {t_chunks:.1f} | {t_chunks_cpu:.1f} | | |")
    print(f"| Freki / txtai | {f_index / t_index:.2f} | {f_cpu / t_cpu:.2f} | {f_p50 / t_p50:.2f} | "
          f"{f_ndcg / t_ndcg:.2f} |")
    print(f"| Freki / txtai on the same chunks | {f_index / t_chunks:.2f} | {f_cpu / t_chunks_cpu:.2f} | | |",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[1000], help="subset sizes (5183 = all of SciFact)")
    args = parser.parse_args()
    print(f"CPU: {cpu_description()}", flush=True)
    for n in args.docs:
        side_by_side(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
