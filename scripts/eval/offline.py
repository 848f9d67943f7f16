"""Measure retrieval ideas offline on cached eval indexes before building them: BM25 constants and
pseudo-relevance feedback, against Freki's default (convex hybrid) ranking.

Reads each set's cached index once (``evalsets/replica.py``: chunk texts and vectors, query vectors from
Freki's embedder) and ranks the way the store does, so an index-time change (BM25 k1 / b / avgdl) needs no
re-index and a query-time one (a second search) no service code. ``--validate`` first runs the same
queries through the gRPC API on a copy of the index and prints both figures and how many top-10 lists
agree: trust the replica only when they match. ``--cost`` times the store calls a feedback query adds.

Variants (each cell: nDCG@10, then the paired difference to the plain run of the same mode, ``dense``,
``sparse`` or ``default``, with its 95 % bootstrap interval over the queries):

* ``--bm25 k1/b/avgdl,...``: passage weights recomputed; rows ``sparse`` and ``default`` with them.
* ``--rocchio k/beta,...``: dense Rocchio, ``q' = normalise(q + beta * mean of the top-k chunk vectors)``;
  ``dense`` = feedback from and second search in dense mode; ``default`` = feedback from the default
  (convex) top k, second convex search with q' (BM25 side unchanged).
* ``--rm3 k/terms/lambda,...``: RM3 expansion of the BM25 query: ``p(t|R) = sum_d w_d tf(t,d) / |d|`` over
  the top-k chunks (``w_d`` their relevance, normalised), the ``terms`` most likely terms added so that the
  original terms keep ``lambda`` of the query's weight; ``sparse`` = feedback from sparse mode,
  ``default`` = from the convex top k, second convex search (lexical half score scaled by the query weight).

Tune on train splits (SciFact train, SQuAD train; the pydoc sets have one split, "test"):

    python -m scripts.eval.offline --validate
    python -m scripts.eval.offline --bm25 1.2/0.5/100,0.9/0.3/100 --rocchio 5/0.3 --rm3 10/10/0.7
    python -m scripts.eval.offline --sets scifact --store scifact=.cache/freki-eval/scifact-3b37e0c91499efa8
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from freki.embed.sparse import Bm25Params, SparseEncoder
from freki.engine import FrekiEngine
from freki.settings import RetrievalSettings
from freki.store import ConvexWeights, FieldMatch
from scripts.eval.retrieval import load_sets
from scripts.evalsets import EvalSet
from scripts.evalsets.harness import CACHE, data_dir_for, eval_settings, run_queries, running_freki
from scripts.evalsets.replica import (
    Ranking,
    Replica,
    agreement,
    dump_store,
    paired_bootstrap,
    per_query_ndcg,
)

SETTINGS = RetrievalSettings()
DEPTH = 300  # chunks per query, as scripts/eval/retrieval.py asks the API for (candidate lists as deep)


@dataclass
class Case:
    """One evaluation set over its replica: judged queries of one split."""

    es: EvalSet
    replica: Replica
    qrels: dict[str, dict[str, int]]

    def vector(self, q: str) -> np.ndarray:
        return self.replica.dump.query_vectors[q]


Run = Callable[[Case, str], Ranking]


def dense(case: Case, q: str, vector: np.ndarray | None = None) -> Ranking:
    cos = case.replica.cosines(case.vector(q) if vector is None else vector)
    rows = case.replica.dense_top(cos, DEPTH)
    return case.replica.documents(rows, cos[rows])


def sparse(case: Case, q: str, query: dict[int, float] | None = None) -> Ranking:
    bm = case.replica.bm25(query if query is not None else case.replica.query_terms(case.es.queries[q])[0])
    rows = case.replica.sparse_top(bm, DEPTH)
    return case.replica.documents(rows, bm[rows])


def default(case: Case, q: str, vector: np.ndarray | None = None, query: dict[int, float] | None = None,
            weight: float | None = None) -> Ranking:
    """Convex hybrid, optionally with another query vector and / or a weighted BM25 query."""
    rows, scores = _convex(case, q, vector, query, weight)
    return case.replica.documents(rows, scores)


def _convex(case: Case, q: str, vector: np.ndarray | None = None, query: dict[int, float] | None = None,
            weight: float | None = None) -> tuple[list[int], list[float]]:
    terms, n = case.replica.query_terms(case.es.queries[q])
    cos = case.replica.cosines(case.vector(q) if vector is None else vector)
    bm = case.replica.bm25(terms if query is None else query)
    half = SETTINGS.sparse_half_score * (n if weight is None else max(1.0, weight))
    fused = case.replica.convex(cos, bm, half, DEPTH, SETTINGS.sparse_weight)
    return [int(s.id) for s in fused], [s.score for s in fused]


def rocchio(case: Case, q: str, feedback: list[int], beta: float) -> np.ndarray:
    vector = case.vector(q) / np.linalg.norm(case.vector(q))
    moved = vector + beta * case.replica.dump.dense[feedback].mean(axis=0)
    return np.asarray(moved / np.linalg.norm(moved))


def rm3(case: Case, q: str, feedback: list[int], relevance: list[float], terms: int, lam: float
        ) -> tuple[dict[int, float], float]:
    """The expanded BM25 query and its total weight."""
    r = case.replica
    original, _ = r.query_terms(case.es.queries[q])
    total = sum(relevance) or 1.0
    model: dict[int, float] = defaultdict(float)
    for row, rel in zip(feedback, relevance, strict=True):
        cols, tfs = r.terms_of_chunk(row)
        length = max(1.0, float(tfs.sum()))
        for col, tf in zip(cols, tfs, strict=True):
            model[int(col)] += rel / total * tf / length
    best = sorted(model.items(), key=lambda kv: -kv[1])[:terms]
    mass = sum(p for _, p in best) or 1.0
    scale = (1.0 - lam) / lam * max(1, len(original))
    query = dict(original)
    for col, p in best:
        query[col] = query.get(col, 0.0) + scale * p / mass
    return query, sum(query.values())


def variants(args: argparse.Namespace) -> list[tuple[str, Run, Bm25Params | None]]:
    out: list[tuple[str, Run, Bm25Params | None]] = [
        ("dense", dense, None), ("sparse", sparse, None), ("default", default, None)]
    for spec in filter(None, args.bm25.split(",")):
        k1, b, avgdl = (float(x) for x in spec.split("/"))
        params = Bm25Params(k1, b, avgdl)
        out += [(f"bm25 {spec}: sparse", sparse, params), (f"bm25 {spec}: default", default, params)]
    for spec in filter(None, args.rocchio.split(",")):
        k, beta = int(spec.split("/")[0]), float(spec.split("/")[1])

        def dense_rocchio(case: Case, q: str, k: int = k, beta: float = beta) -> Ranking:
            cos = case.replica.cosines(case.vector(q))
            return dense(case, q, rocchio(case, q, list(case.replica.dense_top(cos, k)), beta))

        def default_rocchio(case: Case, q: str, k: int = k, beta: float = beta) -> Ranking:
            rows, _ = _convex(case, q)
            return default(case, q, vector=rocchio(case, q, rows[:k], beta))

        out += [(f"rocchio {spec}: dense", dense_rocchio, None), (f"rocchio {spec}: default", default_rocchio, None)]
    for spec in filter(None, args.rm3.split(",")):
        k, terms, lam = int(spec.split("/")[0]), int(spec.split("/")[1]), float(spec.split("/")[2])

        def sparse_rm3(case: Case, q: str, k: int = k, terms: int = terms, lam: float = lam) -> Ranking:
            bm = case.replica.bm25(case.replica.query_terms(case.es.queries[q])[0])
            rows = [int(i) for i in case.replica.sparse_top(bm, k)]
            return sparse(case, q, rm3(case, q, rows, [float(bm[i]) for i in rows], terms, lam)[0]) if rows else []

        def default_rm3(case: Case, q: str, k: int = k, terms: int = terms, lam: float = lam) -> Ranking:
            rows, scores = _convex(case, q)
            query, weight = rm3(case, q, rows[:k], scores[:k], terms, lam)
            return default(case, q, query=query, weight=weight)

        out += [(f"rm3 {spec}: sparse", sparse_rm3, None), (f"rm3 {spec}: default", default_rm3, None)]
    return out


def store_dir(es: EvalSet, overrides: dict[str, str]) -> Path:
    family = es.name.split("-")[0]
    path = Path(overrides[family]) if family in overrides else data_dir_for(family, es.corpus, eval_settings(Path(".")))
    if not (path / "eval-complete.json").exists():
        raise SystemExit(f"no complete index of {family} at {path}: run python -m scripts.eval.retrieval "
                         f"--sets {es.name} first, or pass --store {family}=DIR (an earlier cache under {CACHE})")
    return path


def validate(case: Case, data_dir: Path) -> None:
    """The same queries through the gRPC API on a copy of the index: figures and identical top-10 lists."""
    queries = {q: case.es.queries[q] for q in case.qrels}
    with tempfile.TemporaryDirectory(prefix="freki-validate-") as tmp:
        copy = Path(tmp) / data_dir.name
        shutil.copytree(data_dir, copy)
        with running_freki(eval_settings(copy)) as stub:
            for mode, run in (("dense", dense), ("sparse", sparse), ("default", default)):
                api = run_queries(stub, queries, mode, DEPTH)
                mine = {q: run(case, q) for q in case.qrels}
                a, m = per_query_ndcg(api, case.qrels), per_query_ndcg(mine, case.qrels)
                print(f"[{case.es.name}] {mode:8s} API {np.mean(list(a.values())):.4f}  replica "
                      f"{np.mean(list(m.values())):.4f}  identical top-10 {agreement(mine, api):.1%}", flush=True)


def feedback_cost(case: Case, data_dir: Path, queries: int = 300, rounds: int = 3, k: int = 5) -> None:
    """Thread CPU of the store calls of a top-5 query: dense; default (one convex query); default with Rocchio
    feedback (convex top k without payloads, their vectors, a second convex query). Query vectors are given."""
    qids = sorted(case.qrels)[:queries]
    encoder = SparseEncoder()
    with tempfile.TemporaryDirectory(prefix="freki-cost-") as tmp:
        copy = Path(tmp) / data_dir.name
        shutil.copytree(data_dir, copy)
        engine = FrekiEngine(eval_settings(copy))
        try:
            [store] = engine.chunk_stores
            flt = [FieldMatch("tenant_id", (store.scroll((), limit=1)[0][0].payload["tenant_id"],))]
            vectors = {q: case.vector(q).tolist() for q in qids}
            lexical = {q: encoder.encode_query(case.es.queries[q]) for q in qids}

            def weights(q: str) -> ConvexWeights:
                half = SETTINGS.sparse_half_score * max(1, len(lexical[q].indices))
                return ConvexWeights(SETTINGS.sparse_weight, half)

            def with_feedback(q: str) -> None:
                first = store.search_convex(vectors[q], lexical[q], flt, k, SETTINGS.candidates, weights(q),
                                            with_payload=False)
                fb = np.asarray([p.dense for p in store.retrieve([p.id for p in first], with_vectors=True)])
                moved = np.asarray(vectors[q]) + 0.3 * fb.mean(axis=0)
                store.search_convex((moved / np.linalg.norm(moved)).tolist(), lexical[q], flt, 5, SETTINGS.candidates,
                                    weights(q), with_payload=True)

            paths: dict[str, Callable[[str], object]] = {
                "dense": lambda q: store.search_dense(vectors[q], flt, 5, with_payload=True),
                "default": lambda q: store.search_convex(vectors[q], lexical[q], flt, 5, SETTINGS.candidates,
                                                         weights(q), with_payload=True),
                f"default + Rocchio (k {k})": with_feedback,
            }
            cpu: dict[str, list[float]] = defaultdict(list)
            for _ in range(rounds + 1):  # the first round warms up and is not counted
                for name, path in paths.items():
                    for q in qids:
                        started = time.thread_time()
                        path(q)
                        cpu[name].append(time.thread_time() - started)
            for name, times in cpu.items():
                print(f"[{case.es.name}] {name:24s} p50 {1000 * np.median(times[len(qids):]):.2f} ms thread CPU "
                      f"per query ({len(times) - len(qids)} searches, store calls only)")
        finally:
            engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="scifact,squad,pydoc-lexical,pydoc-paraphrase")
    parser.add_argument("--split", default="train", help="split of sets that have it (the pydoc sets: test)")
    parser.add_argument("--store", action="append", default=[], help="FAMILY=DIR: use this cached index")
    parser.add_argument("--validate", action="store_true", help="compare with the gRPC API first")
    parser.add_argument("--cost", action="store_true", help="time the store calls of a feedback query first")
    parser.add_argument("--bm25", default="", help="k1/b/avgdl,...")
    parser.add_argument("--rocchio", default="", help="k/beta,...")
    parser.add_argument("--rm3", default="", help="k/terms/lambda,...")
    args = parser.parse_args()
    overrides = dict(s.split("=", 1) for s in args.store)
    sets = load_sets(args.sets.split(","))
    cases: list[Case] = []
    replicas: dict[Path, Replica] = {}
    for es in sets:
        path = store_dir(es, overrides)
        if path not in replicas:
            family = [s for s in sets if s.name.split("-")[0] == es.name.split("-")[0]]
            replicas[path] = Replica(dump_store(path, family, CACHE.parent / "freki-replica" / f"{path.name}.pkl"))
            r = replicas[path]
            print(f"[{path.name}] {r.n} chunks; indexed terms per chunk mean {r.lengths.mean():.1f}, median "
                  f"{np.median(r.lengths):.0f}; stored BM25 weights vs replica: max diff {r.check_weights():.2g}")
        split = args.split if args.split in es.qrels else "test"
        case = Case(es, replicas[path], es.split(split))
        cases.append(case)
        if args.validate:
            validate(case, path)
        if args.cost:
            feedback_cost(case, path)
    base: dict[str, dict[str, float]] = {}
    print("\n| variant | " + " | ".join(c.es.name for c in cases) + " |\n" + "|---" * (len(cases) + 1) + "|")
    for name, run, params in variants(args):
        cells = []
        for case in cases:
            case.replica.set_bm25(params or Bm25Params())
            scores = per_query_ndcg({q: run(case, q) for q in case.qrels}, case.qrels)
            mean = float(np.mean(list(scores.values())))
            mode = name.rsplit(": ", 1)[-1]  # a variant is compared with the plain run of its mode
            if name == mode:
                base[f"{case.es.name}/{mode}"] = scores
                cells.append(f"{mean:.4f}")
            else:
                diff, lo, hi = paired_bootstrap(base[f"{case.es.name}/{mode}"], scores)
                cells.append(f"{mean:.4f} ({diff:+.4f} [{lo:+.4f}, {hi:+.4f}])")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
