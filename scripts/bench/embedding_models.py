"""Type-specific embedding models: one model vs two, on a SciFact sample, in process (no gRPC).

Configurations (each indexes the same corpus sample into a fresh data dir):

* ``one``: every document embedded by the packaged all-MiniLM-L6-v2.
* ``two``: half the documents (every second id, by ``document_type`` metadata "b") routed to a second
  model built from MiniLM's weights (``--layers`` of its 6 layers, projected to 128 dimensions;
  ``tests/freki/engine/small_models_support.py``);
  queries are embedded by both models and the per-model results merged.
* ``small``: every document embedded by the small model (what half of ``two`` is made of).

Figures: CPU seconds to index the sample (``time.process_time``: this process, all threads), nDCG@10 on the
SciFact test claims in dense and hybrid mode, and CPU and wall milliseconds per dense query (result cache
off, distinct queries so the query-embedding cache misses; ONNX Runtime's worker threads spin while they
wait, so CPU time per query rises with contention from other processes — compare runs taken together).

    PYTHONPATH=.:protos python -m scripts.bench.embedding_models --docs 400 --queries 100
    PYTHONPATH=.:protos python -m scripts.bench.embedding_models --layers 2 --configs two,small
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from freki.embed.embedder import Embedder
from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from scripts.evalsets import scifact
from scripts.evalsets.harness import ndcg_at
from tests.freki.engine.small_models_support import build_small_model


def doc_ranking(hits) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    best: dict[str, float] = {}
    for h in hits:
        best[h.document_id] = max(best.get(h.document_id, -1.0), h.score)
    return sorted(best.items(), key=lambda kv: -kv[1])


def run(label: str, work: Path, corpus: dict[str, str], queries: dict[str, str], qrels, embedder: Embedder,  # type: ignore[no-untyped-def]
        standard: str, routes: dict[str, str], route_half: bool) -> None:
    settings = FrekiSettings(data_dir=work / label, embedding_model=standard, embedding_models=routes,
                             retrieval={"result_cache_bytes": 0})
    engine = FrekiEngine(settings, embedder=embedder if standard == embedder.identity.name else None)
    try:
        started = time.process_time()
        for i, (doc_id, text) in enumerate(sorted(corpus.items())):
            metadata = {"document_type": "b"} if route_half and i % 2 else {}
            engine.index(IndexInput(tenant_id="t", document_id=doc_id, data=text, source=f"{doc_id}.txt",
                                    metadata=metadata))  # type: ignore[arg-type]
        index_cpu = time.process_time() - started
        models = ", ".join(f"{m.model.rsplit('/', 1)[-1]}: {m.document_count} docs/{m.chunk_count} chunks"
                           for m in engine.status("t").models)
        scores: dict[str, float] = {}
        per_query: list[float] = []
        wall: list[float] = []
        for mode in ("dense", "hybrid"):
            ndcg = []
            for qid, rel in qrels.items():
                t0, w0 = time.process_time(), time.perf_counter()
                hits = engine.retrieve(Query(tenant_id="t", text=queries[qid], top_k=100,
                                             score_threshold=0.0, mode=mode))
                if mode == "dense":
                    per_query.append(time.process_time() - t0)
                    wall.append(time.perf_counter() - w0)
                ndcg.append(ndcg_at(doc_ranking(hits), rel))
            scores[mode] = statistics.mean(ndcg)
        print(f"{label:6s} index {index_cpu:6.1f} s CPU | nDCG@10 dense {scores['dense']:.3f} hybrid "
              f"{scores['hybrid']:.3f} | dense query {1000 * statistics.median(per_query):5.1f} ms CPU median, "
              f"{1000 * statistics.mean(per_query):5.1f} mean, wall {1000 * statistics.median(wall):5.1f} ms median | "
              f"{models}", flush=True)
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=400, help="corpus sample size (every judged document kept)")
    parser.add_argument("--queries", type=int, default=100, help="SciFact test claims evaluated")
    parser.add_argument("--configs", default="one,two,small")
    parser.add_argument("--layers", type=int, default=6, help="transformer layers the second model keeps")
    args = parser.parse_args()
    es = scifact.load()
    qrels = dict(sorted(es.split("test").items())[: args.queries])
    sample = es.sampled(args.docs, qrels)
    embedder = Embedder("all-MiniLM-L6-v2")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        small = str(build_small_model(work / f"mini-{args.layers}l-128", layers=args.layers))
        print(f"{len(sample.corpus)} documents, {len(qrels)} test claims", flush=True)
        for label in args.configs.split(","):
            if label == "one":
                run(label, work, sample.corpus, es.queries, qrels, embedder, "all-MiniLM-L6-v2", {}, False)
            elif label == "two":
                run(label, work, sample.corpus, es.queries, qrels, embedder, "all-MiniLM-L6-v2", {"b": small}, True)
            elif label == "small":
                run(label, work, sample.corpus, es.queries, qrels, embedder, small, {}, False)


if __name__ == "__main__":
    main()
