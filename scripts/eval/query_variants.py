"""Do generated query variants (seed 001) help retrieval? nDCG@10 with 0..3 paraphrases from Geri.

For each query, Geri's RewriteQuery is asked for paraphrases exactly as ``ask`` does with ``query_variants``,
then RetrieveContext gets the query plus the first N of them (Freki fuses them).
Tuning data only: SciFact *train* by default (a fixed sample; ``--corpus-sample`` indexes the judged
documents plus random distractors so a run takes minutes). The backend is Geri with the same SmolLM2 as
``scripts/eval/answers.py`` (``ollama``: llama.cpp's server behind the Ollama protocol; ``embedded``: in-process).

    .venv/bin/python -m scripts.eval.query_variants --quick 100 --corpus-sample 600 --backend ollama
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import grpc
from wolf.v1 import freki_pb2_grpc, geri_pb2_grpc

from odin_client import OdinClient, OdinSettings
from odin_client.protocol.messages import rewrite_request
from scripts.eval.answers import geri_for
from scripts.eval.retrieval import ensure_indexed, sample
from scripts.evalsets import scifact
from scripts.evalsets.harness import doc_ranking, eval_settings, evaluate, freki_server, retrieve_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="train")
    parser.add_argument("--quick", type=int, default=100)
    parser.add_argument("--corpus-sample", type=int, default=600)
    parser.add_argument("--backend", choices=["embedded", "ollama"], default="ollama")
    parser.add_argument("--max-variants", type=int, default=3)
    args = parser.parse_args()

    es = scifact.load()
    qrels = sample(es.split(args.split), args.quick)
    if args.corpus_sample:
        es = es.sampled(args.corpus_sample, qrels)
    data_dir = ensure_indexed(es)
    queries = {q: es.queries[q] for q in qrels}
    runs: dict[int, dict[str, list[tuple[str, float]]]] = {n: {} for n in range(args.max_variants + 1)}
    started = time.perf_counter()
    gen_s = 0.0
    failures = 0
    with freki_server(eval_settings(data_dir)) as freki, geri_for(args.backend) as geri:
        settings = OdinSettings(freki_target=freki, geri_target=geri, generate_deadline_s=600)
        with OdinClient(settings) as client:
            stub = freki_pb2_grpc.FrekiServiceStub(client.channels.get(freki))
            rewriter = geri_pb2_grpc.GeriServiceStub(client.channels.get(geri))
            for i, (qid, text) in enumerate(queries.items(), 1):
                t0 = time.perf_counter()
                try:
                    reply = rewriter.RewriteQuery(rewrite_request(text, tenant_id="default",
                                                                  variants=args.max_variants), timeout=600)
                    variants, problems = list(reply.variants), list(reply.warnings)
                except grpc.RpcError as exc:  # what ask does too: a failed paraphrase request means no variants
                    variants, problems = [], [str(exc.details())]
                if problems:
                    failures += 1
                    print(f"  no variants for {qid}: {problems[0][:120]}", flush=True)
                gen_s += time.perf_counter() - t0
                for n in runs:
                    resp = stub.RetrieveContext(retrieve_request(text, "default", 300, variants[:n]), timeout=120)
                    runs[n][qid] = doc_ranking(resp)
                if i <= 3:
                    print(f"  {text!r} -> {variants}", flush=True)
                if i % 25 == 0:
                    print(f"  {i}/{len(queries)} queries", flush=True)
    print(f"\nSciFact {args.split}, {len(queries)} queries, corpus sample {args.corpus_sample}, backend "
          f"{args.backend}; variant generation {gen_s / max(1, len(queries)):.2f} s/query "
          f"(total {time.perf_counter() - started:.0f} s); variant requests that failed: {failures}")
    print("| variants | nDCG@10 | Recall@100 |\n|---|---|---|")
    for n, run in runs.items():
        m = evaluate(run, qrels)
        print(f"| {n} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} |")


if __name__ == "__main__":
    main()
