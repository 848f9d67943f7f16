"""What the type registry's retriever weights cost a search: payloads of every candidate are read to learn
their ``document_type`` (docs/retrieval.md, "Type registry"; decision 0281).

Indexes ``--documents`` one-chunk documents of four types into a temporary data dir, warms the query-embedding
cache, then times the same hybrid searches (result cache off) without weights, with one non-neutral weight,
and without again; prints the median and p90 wall time per search of each pass.

    .venv/bin/python -m scripts.bench.type_weights --documents 200 --queries 60
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import DocumentTypeSettings, FrekiSettings

WORDS = "harbour lighthouse bakery zeppelin orchard observatory tannery ferry kiln loom".split()


def _pass(engine: FrekiEngine, label: str, queries: int) -> None:
    times = []
    for i in range(queries):
        query = Query("bench", f"where is the {WORDS[i % 10]} {i}", 5, 0.0, mode="hybrid")
        started = time.perf_counter()
        engine.retrieve(query)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(f"{label}: median {statistics.median(times):.1f} ms, p90 {times[int(len(times) * 0.9)]:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    settings = FrekiSettings(data_dir=Path(tempfile.mkdtemp(prefix="bench-types-")),
                             retrieval={"result_cache_bytes": 0})
    engine = FrekiEngine(settings)
    try:
        for i in range(args.documents):
            text = (f"Note {i}: the {WORDS[i % 10]} and the {WORDS[(i * 3) % 10]} are described in entry {i} "
                    "of the town guide.")
            engine.index(IndexInput(tenant_id="bench", document_id=f"d{i}", data=text, content_type="text/plain",
                                    metadata={"document_type": f"t{i % 4}"}))
        _pass(engine, "warm-up (fills the query-embedding cache)", args.queries)
        _pass(engine, "no weights", args.queries)
        settings.document_types = {"t1": DocumentTypeSettings(retriever_weight=2.0)}
        _pass(engine, "one weight (t1=2.0)", args.queries)
        settings.document_types = {}
        _pass(engine, "no weights again", args.queries)
    finally:
        engine.close()


if __name__ == "__main__":
    main()
