"""Tables through the real Freki: does the chunk holding a one-cell answer keep its row with the header, and
is it retrieved in the top 3?

A generated set (``evalsets.tables``: PDF ruled and borderless, DOCX, HTML; 5 to 100 rows, the larger
tables several model windows long) is indexed with IndexDocument into a fresh Freki in this process (the
packaged model, the embedded engine, default settings). For every question (the answer is one cell):

* ``kept``: every chunk of the document that holds the person's name holds the whole row line and the
  header line (RetrieveContext restricted to the document, all its chunks);
* ``top-3``: a chunk among the first 3 of RetrieveContext over the whole set (default search mode and
  relevance threshold) is from the right document and holds the whole row and the header; also given
  with ``score_threshold`` 0 (what the threshold drops).

    .venv/bin/python -m scripts.eval.tables
    .venv/bin/python -m scripts.eval.tables --sizes 5,30 --questions 2     # a quick run
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

from wolf.v1 import freki_pb2

from freki.ingest.parsing.tables import markdown_table
from scripts.evalsets.harness import eval_settings, retrieve, running_freki
from scripts.evalsets.tables import TableDoc, generate


def row_line(doc: TableDoc, row: int) -> str:
    return markdown_table([doc.rows[row]], header=doc.header).split("\n")[2]


def header_line(doc: TableDoc) -> str:
    return markdown_table([], header=doc.header).split("\n")[0]


def holds(text: str, doc: TableDoc, row: int) -> bool:
    lines = text.split("\n")
    return row_line(doc, row) in lines and header_line(doc) in lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="5,12,30,60,100")
    parser.add_argument("--questions", type=int, default=4, help="questions per table")
    parser.add_argument("--mode", default="default", choices=["default", "dense", "sparse", "hybrid"],
                        help="search mode of the top-3 check")
    args = parser.parse_args()
    docs = generate(tuple(int(s) for s in args.sizes.split(",")), args.questions)
    by_kind: dict[str, list[tuple[bool, bool, bool]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp, running_freki(eval_settings(Path(tmp))) as stub:
        started = time.perf_counter()
        chunks = 0
        for doc in docs:
            response = stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id=uuid.uuid4().hex, document_id=doc.name, content_bytes=doc.data, source=doc.name),
                timeout=600)
            chunks += response.chunk_count
        print(f"indexed {len(docs)} documents, {chunks} chunks in {time.perf_counter() - started:.1f} s")
        for doc in docs:
            for question, row, _ in doc.questions:
                name = doc.rows[row][0]
                own = retrieve(stub, question, "default", 100, document_ids=[doc.name],
                               score_threshold=0.0).rag_context.documents
                holding = [d.content for d in own if name in d.content]
                kept = bool(holding) and all(holds(text, doc, row) for text in holding)
                found = []
                for threshold in ({}, {"score_threshold": 0.0}):
                    top = retrieve(stub, question, args.mode, 3, **threshold).rag_context.documents
                    found.append(any(d.document_id == doc.name and holds(d.content, doc, row) for d in top))
                by_kind[doc.kind].append((kept, *found))
                if not kept:
                    print(f"  not kept: {doc.name} {question!r}")
    print(f"\n{'set':<16} {'questions':>9} {'kept':>7} {'top-3':>7} {'top-3, no threshold':>20}")
    everything = [result for results in by_kind.values() for result in results]
    for kind, results in [*sorted(by_kind.items()), ("all", everything)]:
        kept, top, unfiltered = (sum(r[i] for r in results) / len(results) for i in range(3))
        print(f"{kind:<16} {len(results):>9} {kept:>7.1%} {top:>7.1%} {unfiltered:>20.1%}")


if __name__ == "__main__":
    main()
