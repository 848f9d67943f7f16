"""The graph study: nDCG@10 and Recall@10 with and without graph expansion, through Freki's gRPC API.

Two corpora:

* ``scifact``: BEIR SciFact (abstracts indexed as plain text: no links), a seeded corpus sample with every
  judged abstract of the evaluated train queries (as scripts/eval/retrieval.py --corpus-sample does).
  Expansion must be a no-op there: the script also counts queries whose ranking changed at all.
* ``nodejs``: the Node.js API reference in Markdown as Debian's ``nodejs`` package installs it
  (/usr/share/doc/nodejs/api), cut into one note per section with its cross-references kept as relative
  Markdown links, and multi-hop questions whose answer is one link away from the section that matches the
  question's wording (``evalsets/nodedocs.py`` says exactly how both are built; deterministic).

Each configuration runs the same queries on the same index (default search mode, threshold 0); only
``RetrievalOptions.graph_expand`` differs. Documents are ranked by their best chunk.

    python -m scripts.eval.graph --sets scifact --corpus-sample 1500 --quick 300
    python -m scripts.eval.graph --sets nodejs
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wolf.v1 import freki_pb2, freki_pb2_grpc

from scripts.evalsets import nodedocs, scifact
from scripts.evalsets.harness import (
    data_dir_for,
    doc_ranking,
    eval_settings,
    index_corpus,
    ndcg_at,
    recall_at,
    retrieve,
    running_freki,
)

Ranking = list[tuple[str, float]]


def index_markdown(stub: freki_pb2_grpc.FrekiServiceStub, notes: Mapping[str, str], data_dir: Path) -> float:
    """IndexDocument every note as Markdown with its path as source (links resolve against it); cached."""
    marker = data_dir / "eval-complete.json"
    if marker.exists():
        return float(json.loads(marker.read_text())["seconds"])
    started = time.perf_counter()
    done = 0
    lock = threading.Lock()

    def one(item: tuple[str, str]) -> None:
        nonlocal done
        path, text = item
        stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=str(uuid.uuid4()), document_id=path, source=path, content=text, content_type="markdown"),
            timeout=600)
        with lock:
            done += 1
            if done % 200 == 0:
                print(f"  indexed {done}/{len(notes)}", flush=True)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, notes.items()))
    seconds = time.perf_counter() - started
    marker.write_text(json.dumps({"seconds": seconds, "documents": len(notes)}))
    return seconds


def rankings(stub: freki_pb2_grpc.FrekiServiceStub, queries: Mapping[str, str], expand: bool,
             top_k: int) -> tuple[dict[str, Ranking], float]:
    """Document rankings of every query and the CPU seconds this process spent (server included)."""
    cpu = time.process_time()

    def one(item: tuple[str, str]) -> tuple[str, Ranking]:
        qid, text = item
        return qid, doc_ranking(retrieve(stub, text, "default", top_k, score_threshold=0.0, graph_expand=expand))

    with ThreadPoolExecutor(4) as pool:
        runs = dict(pool.map(one, queries.items()))
    return runs, time.process_time() - cpu


def report(name: str, runs: dict[bool, dict[str, Ranking]], qrels: Mapping[str, Mapping[str, int]],
           cpu: dict[bool, float]) -> None:
    for expand in (False, True):
        run = runs[expand]
        n = max(1, len(qrels))
        ndcg = sum(ndcg_at(run.get(q, []), rel) for q, rel in qrels.items()) / n
        r10 = sum(recall_at(run.get(q, []), rel, 10) for q, rel in qrels.items()) / n
        print(f"[{name}] expand={'on ' if expand else 'off'} nDCG@10 {ndcg:.4f}  Recall@10 {r10:.4f}  "
              f"({len(qrels)} queries, {cpu[expand]:.1f} s CPU)", flush=True)
    changed = sum(runs[False].get(q) != runs[True].get(q) for q in qrels)
    print(f"[{name}] rankings or scores changed by expansion: {changed} of {len(qrels)} queries", flush=True)


def study(name: str, corpus: Mapping[str, str], queries: Mapping[str, str],
          qrels: Mapping[str, Mapping[str, int]], markdown: bool, top_k: int,
          also: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None, edge_weight: float | None = None,
          follow_seeds: bool = True) -> None:
    """Index (or reuse) the corpus, run every judged query without and with expansion, report.

    ``also``: other judgements of the same queries, reported from the same runs; ``edge_weight``: the
    server's ``graph.edge_weight`` (None = the shipped default)."""
    data_dir = data_dir_for(f"graph-{name}", corpus, eval_settings(Path(".")))
    settings = eval_settings(data_dir)
    graph = {"follow_seeds": follow_seeds, **({"edge_weight": edge_weight} if edge_weight is not None else {})}
    settings = settings.model_copy(update={"graph": settings.graph.model_copy(update=graph)})
    print(f"[{name}] graph settings: {settings.graph.model_dump(exclude={'type_weights'})}", flush=True)
    with running_freki(settings) as stub:
        started = time.perf_counter()
        if markdown:
            index_markdown(stub, corpus, data_dir)
        else:
            index_corpus(stub, corpus, data_dir)
        print(f"[{name}] {len(corpus)} documents indexed/cached in {time.perf_counter() - started:.0f} s "
              f"-> {data_dir}", flush=True)
        runs: dict[bool, dict[str, Ranking]] = {}
        cpu: dict[bool, float] = {}
        for expand in (False, True):
            runs[expand], cpu[expand] = rankings(stub, {q: queries[q] for q in qrels}, expand, top_k)
    report(name, runs, qrels, cpu)
    for label, judged in (also or {}).items():
        report(f"{name} {label}", runs, judged, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="scifact,nodejs")
    parser.add_argument("--split", default="train", help="SciFact split (train: the figures choose nothing)")
    parser.add_argument("--quick", type=int, default=0, help="evaluate this many seeded queries (0 = all)")
    parser.add_argument("--corpus-sample", type=int, default=0, help="SciFact: index a sample of this size")
    parser.add_argument("--top-k", type=int, default=100, help="chunks per query")
    parser.add_argument("--edge-weights", default="", help="comma-separated graph.edge_weight values to run")
    parser.add_argument("--no-follow-seeds", action="store_true", help="graph.follow_seeds off")
    args = parser.parse_args()
    for name in args.sets.split(","):
        if name == "scifact":
            es = scifact.load()
            qrels = es.split(args.split)
            if args.quick:
                qrels = {q: qrels[q] for q in random.Random(7).sample(sorted(qrels), min(args.quick, len(qrels)))}
            if args.corpus_sample:
                es = es.sampled(args.corpus_sample, qrels)
            study(f"scifact-{args.split}", es.corpus, es.queries, qrels, False, args.top_k)
        elif name == "nodejs":
            notes, questions, judged = nodedocs.build()
            # The same questions judged as direct look-ups: only the passage they were taken from counts.
            direct = {q: {doc: 1 for doc, grade in rel.items() if grade == 1} for q, rel in judged.items()}
            for weight in [float(w) for w in args.edge_weights.split(",") if w] or [None]:
                study("nodejs", notes, questions, judged, True, args.top_k, {"direct": direct}, weight,
                      not args.no_follow_seeds)
        else:
            raise SystemExit(f"unknown set {name!r}; use scifact or nodejs")


if __name__ == "__main__":
    main()
