"""Benchmark incremental re-indexing: editing one paragraph of a ~100-chunk document vs a full re-index.

Real model, real Qdrant engine (edge), Freki's own settings. Prints figures; asserts nothing. Goal: an
edit re-embeds at most ~3 chunks and is >= 20x faster than a full re-index. Example:

    .venv/bin/python -m scripts.bench.incremental                  # default chunking, ~100 chunks
    .venv/bin/python -m scripts.bench.incremental --paragraphs 200 --edits 10

Figures:
  cold index      first index: every sentence (for chunk boundaries) and every chunk embedded
  edit (warm)     one paragraph changed; sentence vectors cached from the previous version
  edit (cold)     the same after a restart (sentence cache empty: every sentence re-embedded for chunking)
  full re-index   force_full_reindex: every chunk re-embedded (what a model switch costs per document)
  FullReindex     engine.full_reindex: stored chunk texts re-embedded in place (no parsing/chunking)
  rename          a watched file renamed: points moved to the new id, nothing embedded
  queries         retrieval latency idle vs while a full re-index runs (the service keeps answering)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from freki.watch.moves import move_document

TENANT = "bench"
SUBJECTS = "wolf raven elk lynx otter heron badger marten bison falcon".split()
PLACES = "ridge valley marsh fjord tundra meadow delta canyon forest glacier".split()
VERBS = "tracked counted photographed tagged followed surveyed recorded spotted".split()


def document(paragraphs: int, seed: int = 7) -> list[str]:
    """Distinct paragraphs of 4-6 sentences each."""
    rng = random.Random(seed)
    out = []
    for i in range(paragraphs):
        sentences = [
            f"In survey {i}.{j} the team {rng.choice(VERBS)} {rng.randint(2, 90)} {rng.choice(SUBJECTS)}s "
            f"near the {rng.choice(PLACES)} {rng.choice(PLACES)} camp number {i * 10 + j}."
            for j in range(rng.randint(4, 6))
        ]
        out.append(" ".join(sentences))
    return out


CPU: dict[str, float] = {}


def timed(fn, label: str = ""):  # type: ignore[no-untyped-def]
    """Wall time; the CPU time (all threads) goes to ``CPU[label]``: on a shared box it varies far less."""
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    if label:
        CPU[label] = time.process_time() - cpu
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paragraphs", type=int, default=100)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0,
                        help="torch intra-op threads (0 = torch's default); 1 avoids OpenMP spin-waiting when "
                             "other processes load the cores, which can make small passes 50x slower")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        settings = FrekiSettings(data_dir=Path(tmp))
        engine = FrekiEngine(settings)
        emb = engine.embedder
        paras = document(args.paragraphs)

        def index(text: str, doc_id: str = "doc", label: str = "", **kw):  # type: ignore[no-untyped-def]
            before = emb.texts_embedded
            result, seconds = timed(lambda: engine.index(
                IndexInput(tenant_id=TENANT, document_id=doc_id, data=text, source=f"{doc_id}.txt", **kw)), label)
            return result, seconds, emb.texts_embedded - before

        first, cold_s, cold_texts = index("\n\n".join(paras))
        print(f"document: {args.paragraphs} paragraphs, {first.chunk_count} chunks "
              f"(chunking {settings.chunking.max_tokens}/{settings.chunking.min_tokens} tokens, model window "
              f"{emb.max_seq_length} word-pieces)")
        print(f"cold index        {cold_s * 1000:9.0f} ms   {cold_texts:5d} texts embedded (sentences + chunks)")

        rng = random.Random(11)
        warm: list[float] = []
        warm_cpu: list[float] = []
        embedded_chunks: list[int] = []
        for n in range(args.edits):
            i = rng.randrange(len(paras))
            paras[i] = paras[i].replace(" the team ", f" the field team (edit {n}) ", 1)
            result, seconds, texts = index("\n\n".join(paras), label="edit")
            warm.append(seconds)
            warm_cpu.append(CPU["edit"])
            embedded_chunks.append(result.chunks_embedded)
            print(f"edit (warm) #{n}     {seconds * 1000:9.0f} ms   {texts:5d} texts embedded, "
                  f"{result.chunks_embedded} chunks embedded, {result.chunks_unchanged} kept, "
                  f"{result.chunks_deleted} deleted")

        engine.indexer.sentence_cache.forget(TENANT, "doc")
        paras[0] = paras[0].replace(" the team ", " the night team ", 1)
        result, edit_cold_s, edit_cold_texts = index("\n\n".join(paras))
        print(f"edit (cold cache) {edit_cold_s * 1000:9.0f} ms   {edit_cold_texts:5d} texts embedded, "
              f"{result.chunks_embedded} chunks embedded")

        result, full_s, full_texts = index("\n\n".join(paras), label="full", force_full_reindex=True)
        print(f"full re-index     {full_s * 1000:9.0f} ms   {full_texts:5d} texts embedded, "
              f"{result.chunks_embedded} chunks embedded")
        report, stored_s = timed(lambda: engine.full_reindex(TENANT, "doc"))
        print(f"FullReindex       {stored_s * 1000:9.0f} ms   {report.chunks:5d} chunks embedded "
              f"({report.rechunked} re-chunked from the kept source)")

        moved, move_s = timed(lambda: move_document(engine, TENANT, "doc", "doc-renamed", source="doc-renamed.txt"))
        result, reindex_s, texts = index("\n\n".join(paras), doc_id="doc-renamed")
        print(f"rename            {(move_s + reindex_s) * 1000:9.0f} ms   {texts:5d} texts embedded "
              f"({moved} points moved, then re-indexed under the new id: {result.outcome})")

        median = statistics.median(warm)
        print(f"\nincremental edit (median of {len(warm)}): {median * 1000:.0f} ms, chunks embedded "
              f"max {max(embedded_chunks)}; full re-index {full_s * 1000:.0f} ms -> {full_s / median:.1f}x faster "
              f"(goal >= 20x)")
        cpu_edit = statistics.median(warm_cpu)
        print(f"CPU time (all threads): edit {cpu_edit * 1000:.0f} ms, full re-index {CPU['full'] * 1000:.0f} ms "
              f"-> {CPU['full'] / cpu_edit:.1f}x less CPU (steadier than wall time on a shared machine)")

        def query_latency(label: str, n: int) -> None:
            lat = []
            for q in range(n):
                text = f"where were {SUBJECTS[q % 10]}s {VERBS[q % 8]} near camp {rng.randint(0, 999)}"
                _, s = timed(lambda t=text: engine.retrieve(Query(tenant_id=TENANT, text=t, top_k=5,
                                                                  score_threshold=0.0)))
                lat.append(s * 1000)
            lat.sort()
            p95 = lat[int(0.95 * (len(lat) - 1))]
            print(f"queries {label:<22} p50 {statistics.median(lat):6.0f} ms   p95 {p95:6.0f} ms")

        query_latency("idle", args.queries)
        stop = threading.Event()

        def reindex_loop() -> None:
            while not stop.is_set():
                index("\n\n".join(paras), doc_id="doc-renamed", force_full_reindex=True)

        worker = threading.Thread(target=reindex_loop)
        worker.start()
        try:
            time.sleep(0.5)
            query_latency("during full re-index", args.queries)
        finally:
            stop.set()
            worker.join()
        engine.close()


if __name__ == "__main__":
    main()
