"""OCR quality and speed on rendered SciFact abstracts: character error rate, retrieval nDCG@10, pages/s.

1. CER: ``--cer-docs`` abstracts (and one German page) rendered at 150 and 300 dpi, read back through
   ``parse_document`` (Tesseract, one page at a time), compared with the original text (whitespace
   collapsed; edit distance / reference length).
2. Retrieval: a SciFact subset (every document judged for ``--queries`` test claims, plus seeded
   distractors up to ``--docs``) indexed twice through a real Freki over gRPC: once as the original text,
   once as scans at 300 dpi (even documents as scanned PDFs, odd ones as PNG/TIFF images), the same claims
   asked of both. Reports nDCG@10 of each and the OCR pages/s of the scanned indexing (parser sandbox,
   ``limits.parse_workers`` workers).

    python -m scripts.eval.ocr                       # ~15 min on 2 idle cores, ~28 on a busy box
    python -m scripts.eval.ocr --docs 100 --queries 30 --cer-docs 10
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rapidfuzz.distance import Levenshtein
from wolf.v1 import freki_pb2

from freki.ingest.parsing import parse_document
from scripts.eval.ocr_pages import GERMAN, image_file, normalise, render_pages, scanned_pdf
from scripts.evalsets import scifact
from scripts.evalsets.harness import eval_settings, evaluate, index_corpus, run_queries, running_freki


def scanned_file(text: str, dpi: int, as_pdf: bool) -> tuple[bytes, str, int]:
    """(bytes, source name, pages) of ``text`` rendered as a scan."""
    pages = render_pages(text, dpi)
    if as_pdf:
        return scanned_pdf(pages, dpi), "scan.pdf", len(pages)
    return image_file(pages, "PNG" if len(pages) == 1 else "TIFF"), "scan.tiff", len(pages)


def character_error_rates(corpus: dict[str, str], ids: list[str]) -> None:
    print(f"CER over {len(ids)} SciFact abstracts + 1 German page (Tesseract via parse_document):")
    for dpi in (150, 300):
        errors = length = pages = 0
        seconds = 0.0
        german = 0.0
        for index, doc_id in enumerate([*ids, "german"]):
            text = GERMAN if doc_id == "german" else corpus[doc_id]
            data, name, n = scanned_file(text, dpi, as_pdf=index % 2 == 0)
            started = time.perf_counter()
            got = parse_document(data, source=name).text
            seconds += time.perf_counter() - started
            distance = Levenshtein.distance(normalise(text), normalise(got))
            if doc_id == "german":
                german = distance / len(normalise(text))
                continue
            errors, length, pages = errors + distance, length + len(normalise(text)), pages + n
        print(f"  {dpi} dpi: CER {errors / length:.2%} (English, {pages} pages), German page {german:.2%}; "
              f"{seconds / (pages + 1):.2f} s/page in one process ({(pages + 1) / seconds:.2f} pages/s)", flush=True)


def index_scans(stub: object, corpus: dict[str, str], dpi: int) -> tuple[int, float]:
    """IndexDocument every document as a scan; (pages, seconds)."""
    files = {doc_id: scanned_file(text, dpi, as_pdf=i % 2 == 0) for i, (doc_id, text) in enumerate(corpus.items())}
    started = time.perf_counter()

    def one(item: tuple[str, tuple[bytes, str, int]]) -> None:
        doc_id, (data, name, _) = item
        stub.IndexDocument(freki_pb2.IndexDocumentRequest(  # type: ignore[attr-defined]
            request_id=str(uuid.uuid4()), document_id=doc_id, source=f"{doc_id}-{name}", content_bytes=data),
            timeout=900)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, files.items()))
    return sum(n for _, _, n in files.values()), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=300, help="documents in the retrieval subset")
    parser.add_argument("--queries", type=int, default=100, help="test claims asked")
    parser.add_argument("--cer-docs", type=int, default=20)
    parser.add_argument("--dpi", type=int, default=300, help="dpi of the scanned copies in the retrieval run")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    full = scifact.load()
    qrels = dict(sorted(full.split("test").items())[: args.queries])
    subset = full.sampled(args.docs, qrels)
    corpus = subset.corpus
    queries = {q: full.queries[q] for q in qrels}
    print(f"SciFact subset: {len(corpus)} documents, {len(queries)} test claims", flush=True)
    character_error_rates(corpus, sorted(corpus)[: args.cer_docs])

    with tempfile.TemporaryDirectory() as tmp:
        text_dir, scan_dir = Path(tmp) / "text", Path(tmp) / "scan"
        with running_freki(eval_settings(text_dir)) as stub:
            index_corpus(stub, corpus, text_dir)
            original = evaluate(run_queries(stub, queries, "default"), qrels)
        with running_freki(eval_settings(scan_dir)) as stub:
            pages, seconds = index_scans(stub, corpus, args.dpi)
            scanned = evaluate(run_queries(stub, queries, "default"), qrels)
    print(f"Retrieval (default search, {len(queries)} claims): nDCG@10 text {original['ndcg@10']:.4f}, "
          f"scanned at {args.dpi} dpi {scanned['ndcg@10']:.4f} (diff {scanned['ndcg@10'] - original['ndcg@10']:+.4f}); "
          f"Recall@100 {original['recall@100']:.4f} / {scanned['recall@100']:.4f}")
    print(f"Indexing the scans: {pages} pages in {seconds:.0f} s = {pages / seconds:.2f} pages/s "
          "(OCR + embedding, parser sandbox, default parse_workers)")


if __name__ == "__main__":
    main()
