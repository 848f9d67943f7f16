"""Benchmark ingestion throughput: a mixed folder dropped into a watched folder, and `odin index`'s stream.

Documents are SciFact abstracts (../shared/eval/scifact/corpus.jsonl) written as the formats asked for, in
turn: txt, md, html, pdf (a text layer, ``--pdf-pages`` pages each), docx; on request pptx, xlsx, eml, png
(a scanned page as an image) and ``scanned`` (image-only PDF pages). Freki's OCR reads png and scanned; the
table gives OCR pages/s apart. A format Freki cannot parse (or OCR switched off, ``limits.ocr_max_pages``
0) is counted as skipped, not an error, so the same command measures new formats once they land. Real
model, real Qdrant engine (edge), real parser sandbox; default settings apart from what is said below.
Prints figures; asserts nothing.

Modes (each on a fresh data dir, the same files, one shared embedder):
  watch1     watched folder, watch.workers = 1 (one file at a time: parse, then embed)
  watch2     watched folder, watch.workers = 2 (one file parsed while another is embedded)
  watchN     any N
  stream     `odin index`'s path: OdinClient.index_documents over Freki's IndexDocuments stream (real gRPC
             server; limits.batch_parallel documents in work)

Figures per mode: documents/s (indexed + skipped over wall time from the drop to idle), PDF pages/s (text
layer) and OCR pages/s (scanned and png; pages of the documents indexed), encoder busy share (wall time with
a model pass running / wall time), CPU seconds (this process + the parser worker processes). Example:

    .venv/bin/python -m scripts.bench.ingest --docs 300 --modes watch1,watch2,stream
    .venv/bin/python -m scripts.bench.ingest --docs 60 --formats pdf,scanned --pdf-pages 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from scripts.common import cpu_description

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from freki.engine import FrekiEngine
from freki.engine.config import build_embedder
from freki.settings import FrekiSettings
from freki.watch.watcher import Watcher
from scripts.bench.mixed_documents import MAKERS, OCR_FORMATS, write_corpus

TENANT = "default"


# -- measuring ---------------------------------------------------------------------------------------------
class EncoderClock:
    """Wall time during which at least one model pass runs (wraps the embedder's encode function)."""

    def __init__(self, embedder) -> None:  # type: ignore[no-untyped-def]
        self._target = embedder._batcher if getattr(embedder, "_batcher", None) is not None else embedder
        self._real = self._target._encode
        self._lock = threading.Lock()
        self._running = 0
        self._since = 0.0
        self.busy = 0.0
        self._target._encode = self._encode

    def _encode(self, texts):  # type: ignore[no-untyped-def]
        with self._lock:
            if self._running == 0:
                self._since = time.perf_counter()
            self._running += 1
        try:
            return self._real(texts)
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self.busy += time.perf_counter() - self._since

    def restore(self) -> None:
        self._target._encode = self._real


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def settings_for(data_dir: Path, folder: Path | None, workers: int) -> FrekiSettings:
    watch: dict[str, object] = {"folders": [{"path": str(folder), "name": "bench"}], "debounce_s": 0.6,
                                "workers": workers} if folder is not None else {}
    return FrekiSettings(host="127.0.0.1", port=0, data_dir=data_dir, watch=watch)  # type: ignore[arg-type]


def run_watch(workers: int, corpus: Path, work: Path, embedder, timeout: float) -> dict[str, float]:  # type: ignore[no-untyped-def]
    folder = work / "watched"
    folder.mkdir()
    settings = settings_for(work / "data", folder, workers)
    engine = FrekiEngine(settings, embedder=embedder)
    watcher = Watcher(engine, settings)
    watcher.start()
    assert watcher.wait_idle(60), "the empty folder's catch-up did not finish"
    clock = EncoderClock(engine.embedder)
    names = sorted(p.name for p in corpus.iterdir())
    cpu, child = time.process_time(), children_cpu()
    start = time.perf_counter()
    for name in names:  # the drop: files copied in, as a user or a sync client would
        shutil.copyfile(corpus / name, folder / name)
    deadline = start + timeout
    while time.perf_counter() < deadline:
        done = sum(watcher.counts[k] for k in ("created", "updated", "unchanged", "skipped"))
        if done >= len(names) and watcher.wait_idle(1.0):
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - start
    clock.restore()
    skipped = {s.path.rsplit("/", 1)[-1]: s.reason for f in watcher.status()[0] for s in f.skipped}
    watcher.stop()
    engine.close()
    return {"elapsed": elapsed, "busy": clock.busy, "cpu": time.process_time() - cpu + children_cpu() - child,
            "skipped": skipped, "timed_out": elapsed >= timeout}  # type: ignore[dict-item]


def run_stream(corpus: Path, work: Path, embedder) -> dict[str, float]:  # type: ignore[no-untyped-def]
    from freki.api.server import build_server
    from odin_client import OdinClient
    from odin_client.protocol.files import discover
    from odin_client.settings import OdinSettings

    settings = settings_for(work / "data", None, 0)
    engine = FrekiEngine(settings, embedder=embedder)
    handle, engine = build_server(settings, engine=engine)
    client = OdinClient(OdinSettings(freki_target=handle.address))
    clock = EncoderClock(engine.embedder)
    docs, refused = discover([corpus])  # what `odin index` would not send (a format it knows Freki refuses)
    cpu, child = time.process_time(), children_cpu()
    start = time.perf_counter()
    results = client.index_documents(docs)
    elapsed = time.perf_counter() - start
    clock.restore()
    skipped = {d.path.name: str(r) for d, r in zip(docs, results, strict=True) if isinstance(r, Exception)}
    skipped.update({path.name: f"not sent: {why}" for path, why in refused})
    client.close()
    handle.stop(1.0)
    engine.close()
    return {"elapsed": elapsed, "busy": clock.busy, "cpu": time.process_time() - cpu + children_cpu() - child,
            "skipped": skipped}  # type: ignore[dict-item]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--formats", default="txt,md,html,pdf,docx",
                        help=f"comma-separated, in turn; known: {', '.join(MAKERS)}")
    parser.add_argument("--pdf-pages", type=int, default=2, help="pages per PDF (text layer and scanned)")
    parser.add_argument("--modes", default="watch1,watch2,stream")
    parser.add_argument("--timeout", type=float, default=3600.0, help="per mode")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    formats = args.formats.split(",")
    unknown = [f for f in formats if f not in MAKERS]
    if unknown:
        parser.error(f"unknown format(s) {', '.join(unknown)}; known: {', '.join(MAKERS)}")

    cpu_name = cpu_description()
    print(f"CPU: {cpu_name}; {args.docs} documents, formats {formats}, "
          f"{args.pdf_pages} pages per PDF", flush=True)
    embedder = build_embedder(FrekiSettings())
    embedder.embed(["warm-up pass so the first mode does not pay for loading the model"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        corpus.mkdir()
        files = write_corpus(corpus, args.docs, formats, args.pdf_pages)
        for run, mode in enumerate(args.modes.split(",")):
            print(f"-- {mode} ...", flush=True)
            (work / f"run{run}").mkdir()
            if mode.startswith("watch"):
                result = run_watch(int(mode[5:] or 1), corpus, work / f"run{run}", embedder, args.timeout)
            elif mode == "stream":
                result = run_stream(corpus, work / f"run{run}", embedder)
            else:
                parser.error(f"unknown mode {mode!r}: watchN or stream")
            skipped: dict[str, str] = result["skipped"]  # type: ignore[assignment]
            indexed = [n for n in files if n not in skipped]
            pdf_pages = sum(files[n]["pages"] for n in indexed if formats[files[n]["format"]] == "pdf")
            scanned_pages = sum(files[n]["pages"] for n in indexed if formats[files[n]["format"]] in OCR_FORMATS)
            by_format = Counter(formats[files[n]["format"]] for n in skipped if n in files)
            elapsed = result["elapsed"]
            rows.append({"mode": mode, "seconds": round(elapsed, 1), "docs_per_s": round(len(files) / elapsed, 2),
                         "indexed": len(indexed), "skipped": dict(by_format),
                         "pdf_pages_per_s": round(pdf_pages / elapsed, 2),
                         "ocr_pages_per_s": round(scanned_pages / elapsed, 2),
                         "encoder_busy": round(result["busy"] / elapsed, 2), "cpu_s": round(result["cpu"], 1)})
            print(json.dumps(rows[-1]), flush=True)
            if skipped:
                print("   e.g. skipped:", next(iter(skipped.items())), flush=True)
    print(f"\n{'mode':8} {'s':>7} {'docs/s':>7} {'pdf p/s':>8} {'OCR p/s':>8} {'enc busy':>8} {'CPU s':>7}  skipped")
    for r in rows:
        print(f"{r['mode']:8} {r['seconds']:7.1f} {r['docs_per_s']:7.2f} {r['pdf_pages_per_s']:8.2f} "
              f"{r['ocr_pages_per_s']:8.2f} {r['encoder_busy']:8.2f} {r['cpu_s']:7.1f}  {r['skipped'] or '-'}")
    if args.json:
        figures = {"cpu": cpu_name, "docs": args.docs, "formats": formats, "rows": rows}
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
