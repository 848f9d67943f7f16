"""Every document format round-trips known text through the real Freki.

For each format (PPTX, XLSX, ODS, ODT, EPUB, EML, MSG, and DOCX/HTML/text for comparison) documents are
written with the writing side of real libraries (tests/freki/ingest/office_files_support.py), each holding the
sentences of one SciFact abstract (../shared/eval/scifact/corpus.jsonl). They are indexed over gRPC into a
fresh Freki (real parser sandbox, model and Qdrant engine), then:

* coverage: the fraction of source sentences found, normalised (case, whitespace, table pipes), inside one
  stored chunk (read back with ExportOwnerData);
* retrieval: the fraction of documents in the top 3 documents for one of their sentences (the second);
* parse time per document in the parser sandbox (worker process, 1 GiB cap), median and max.

``--big`` also parses one large document per format in the sandbox (a 300-slide deck, a 190,000-cell
workbook, a 20,000-attachment e-mail…) and prints its time and its worker's peak RSS.

    python -m scripts.eval.formats                 # 25 documents per format
    python -m scripts.eval.formats --docs 10 --big
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
import unicodedata
import uuid
from collections.abc import Callable
from pathlib import Path

from wolf.v1 import common_pb2, freki_pb2

from freki.ingest.sandbox import ParserSandbox, SandboxConfig
from scripts.common import SCIFACT_DIR
from scripts.evalsets.harness import eval_settings, running_freki
from tests.freki.ingest import office_files_support as files

SCIFACT = SCIFACT_DIR / "corpus.jsonl"
OWNER = "formats-eval"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) > 20]


def _docx(title: str, lines: list[str]) -> bytes:
    import io

    import docx

    document = docx.Document()
    document.add_heading(title, 1)
    for line in lines:
        document.add_paragraph(line)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _html(title: str, lines: list[str]) -> bytes:
    body = "".join(f"<p>{line}</p>" for line in lines)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>".encode()


WRITERS: dict[str, tuple[str, Callable[[str, list[str]], bytes]]] = {
    "pptx": ("pptx", lambda t, s: files.build_pptx(
        [{"title": t[:80], "body": s[i:i + 3]} for i in range(0, len(s), 3)][:-1]
        + [{"title": "Summary", "body": s[-1:], "notes": " ".join(s[-3:-1])}])),
    "xlsx": ("xlsx", lambda t, s: files.build_xlsx({"Findings": [["No.", "Finding"], *[[n, x] for n, x in
                                                                                       enumerate(s, 1)]]})),
    "ods": ("ods", lambda t, s: files.build_ods({"Findings": [["No.", "Finding"], *[[n, x] for n, x in
                                                                                    enumerate(s, 1)]]})),
    "odt": ("odt", lambda t, s: files.build_odt([("h1", t), *[("p", x) for x in s]], title=t)),
    "epub": ("epub", lambda t, s: files.build_epub([(t[:60], "".join(f"<p>{x}</p>" for x in s))], title=t)),
    "eml": ("eml", lambda t, s: files.build_eml("\n\n".join(s), subject=t[:120])),
    "msg": ("msg", lambda t, s: files.build_msg("\r\n\r\n".join(s), subject=t[:120])),
    "docx": ("docx", _docx),
    "html": ("html", _html),
}


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\\|", "|")
    return re.sub(r"[\s|]+", " ", text).strip().lower()


def load_abstracts(count: int, per_format: int) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    with SCIFACT.open() as lines:
        for line in lines:
            row = json.loads(line)
            found = sentences(row["text"])
            if len(found) >= 4:
                out.append((row["title"], found))
            if len(out) >= count * per_format:
                break
    return out


def parse_times(sandbox: ParserSandbox, docs: list[tuple[str, str, bytes]]) -> list[float]:
    times = []
    for _doc_id, source, data in docs:
        started = time.perf_counter()
        sandbox.parse(data, source=source)
        times.append(time.perf_counter() - started)
    return times


def run(per_format: int) -> None:
    abstracts = load_abstracts(len(WRITERS), per_format)
    docs: dict[str, list[tuple[str, str, bytes]]] = {}
    known: dict[str, list[str]] = {}
    for number, fmt in enumerate(WRITERS):
        ext, write = WRITERS[fmt]
        docs[fmt] = []
        for title, lines in abstracts[number * per_format:(number + 1) * per_format]:
            doc_id = f"{fmt}-{len(docs[fmt])}"
            docs[fmt].append((doc_id, f"eval/{doc_id}.{ext}", write(title, lines)))
            known[doc_id] = lines
    sandbox = ParserSandbox(SandboxConfig(workers=1))
    sandbox.parse(b"warm up", source="w.txt")
    times = {fmt: parse_times(sandbox, items) for fmt, items in docs.items()}
    sandbox.close()
    with tempfile.TemporaryDirectory() as data_dir, running_freki(eval_settings(Path(data_dir))) as stub:
        for items in docs.values():
            for doc_id, source, data in items:
                stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id=uuid.uuid4().hex, document_id=doc_id, source=source, content_bytes=data,
                    owner_id=OWNER), timeout=300)
        chunks: dict[str, list[str]] = {}
        for message in stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(request_id="x", owner_id=OWNER),
                                            timeout=300):
            if message.WhichOneof("record") == "chunk":
                chunks.setdefault(message.chunk.document_id, []).append(normalise(message.chunk.content))
        print(f"{'format':<6} {'docs':>4} {'coverage':>9} {'top-3':>6} {'parse p50 ms':>13} {'parse max ms':>13}")
        for fmt, items in docs.items():
            found = total = hits = 0
            for doc_id, _source, _data in items:
                stored = chunks.get(doc_id, [])
                for line in known[doc_id]:
                    total += 1
                    found += any(normalise(line) in chunk for chunk in stored)
                response = stub.RetrieveContext(common_pb2.WolfRequest(
                    request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt=known[doc_id][1],
                    retrieval=common_pb2.RetrievalOptions(top_k=20)), timeout=60)
                ranked = list(dict.fromkeys(d.document_id for d in response.rag_context.documents))
                hits += doc_id in ranked[:3]
            print(f"{fmt:<6} {len(items):>4} {found / total:>9.4f} {hits / len(items):>6.3f} "
                  f"{statistics.median(times[fmt]) * 1000:>13.1f} {max(times[fmt]) * 1000:>13.1f}")


def big_documents() -> dict[str, tuple[str, bytes]]:
    line = "The quick survey of the harbour counted forty-two boats before noon."
    many = [(f"note{n}.txt", f"attachment {n}: {line}".encode(), "text/plain") for n in range(20_000)]
    return {
        "pptx": ("big.pptx", files.build_pptx([{"title": f"Slide {n}", "body": [line] * 5, "notes": line}
                                               for n in range(300)])),
        "xlsx": ("big.xlsx", files.build_xlsx({f"S{s}": [[f"boat {r}-{c}" for c in range(19)] for r in range(2_000)]
                                               for s in range(5)})),
        "ods": ("big.ods", files.build_ods({"S": [[f"boat {r}-{c}" for c in range(19)] for r in range(5_000)]})),
        "odt": ("big.odt", files.build_odt([("p", f"{line} {n}") for n in range(20_000)])),
        "epub": ("big.epub", files.build_epub([(f"Ch {c}", "".join(f"<p>{line} {n}</p>" for n in range(500)))
                                               for c in range(40)])),
        "eml": ("big.eml", files.build_eml(line, attachments=many)),
        "msg": ("big.msg", files.build_msg(line, attachments=many[:200])),
    }


def _peak_rss_mib(box: ParserSandbox) -> float:
    """Peak RSS (VmHWM) of the sandbox's idle worker: counted from its exec, so the parent's pages shared
    across fork do not count (RUSAGE_CHILDREN's maxrss would include them)."""
    workers = box._idle  # a script's look inside: the worker that just answered waits here
    if not workers:
        return float("nan")
    status = Path(f"/proc/{workers[0].process.pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


def run_big() -> None:
    print(f"{'format':<6} {'bytes':>11} {'parse s':>8} {'peak RSS MiB':>13}  outcome")
    for fmt, (source, data) in big_documents().items():
        box = ParserSandbox(SandboxConfig(workers=1))
        started = time.perf_counter()
        try:
            document = box.parse(data, source=source)
            outcome = f"{len(document.sections)} sections, {len(document.text):,} chars"
        except Exception as exc:  # report the refusal as a result
            outcome = f"{type(exc).__name__}: {exc}"[:160]
        print(f"{fmt:<6} {len(data):>11,} {time.perf_counter() - started:>8.2f} {_peak_rss_mib(box):>13.0f}  {outcome}")
        box.close()
    print(f"(parser workers are capped at {SandboxConfig().memory_mb} MiB of address space)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--big", action="store_true", help="also parse one large document per format")
    parser.add_argument("--docs", type=int, default=25, help="documents per format (0: none)")
    args = parser.parse_args()
    if args.big:
        run_big()
    if args.docs:
        run(args.docs)


if __name__ == "__main__":
    main()
