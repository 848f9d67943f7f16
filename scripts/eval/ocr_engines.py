"""Tesseract (pytesseract) vs RapidOCR (PP-OCRv4 ONNX) on the same rendered pages: CER, time, memory.

Each engine runs in a child process under the parser worker's address-space cap (RLIMIT_AS, default
1024 MiB as ``limits.parse_memory_mb``), so "works under the cap" is measured, not assumed.

    python -m scripts.eval.ocr_engines --pages 6 --memory-mb 1024
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from scripts.common import REPO, SCIFACT_DIR
from scripts.eval.ocr_pages import GERMAN, fitted_text, normalise, render_page

CORPUS = SCIFACT_DIR / "corpus.jsonl"


def texts(pages: int) -> list[tuple[str, str]]:
    """(language, text) pages: SciFact abstracts in English, and one German page."""
    out: list[tuple[str, str]] = []
    with open(CORPUS, encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            if len(doc["text"]) > 600:
                out.append(("en", fitted_text(f"{doc['title']} {doc['text']}")))
            if len(out) >= pages:
                break
    out.append(("de", fitted_text(GERMAN)))
    return out


def run_tesseract(image: object) -> str:
    import pytesseract

    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # as freki/ingest/parsing/ocr.py runs it

    return str(pytesseract.image_to_string(image, lang="deu+eng"))


_RAPID: list[object] = []


def run_rapidocr(image: object) -> str:
    import numpy as np
    from rapidocr_onnxruntime import RapidOCR

    if not _RAPID:
        _RAPID.append(RapidOCR())
    result, _ = _RAPID[0](np.asarray(image.convert("RGB")))  # type: ignore[attr-defined, operator]
    boxes = sorted(result or [], key=lambda r: (r[0][0][1], r[0][0][0]))
    return " ".join(r[1] for r in boxes)


def child(engine: str, dpi: int, pages: int, memory_mb: int) -> None:
    from rapidfuzz.distance import Levenshtein

    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))
    started = time.perf_counter()
    runner = run_tesseract if engine == "tesseract" else run_rapidocr
    if engine == "rapidocr":
        from rapidocr_onnxruntime import RapidOCR  # noqa: F401
    import_s = time.perf_counter() - started
    rows = []
    for language, text in texts(pages):
        image = render_page(text, dpi)
        t0 = time.perf_counter()
        try:
            got = runner(image)
        except Exception as exc:  # noqa: BLE001 - report what broke under the cap
            rows.append({"lang": language, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
            continue
        seconds = time.perf_counter() - t0
        ref, hyp = normalise(text), normalise(got)
        cjk = sum(1 for ch in hyp if "\u2e80" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef")
        rows.append({"lang": language, "cer": Levenshtein.distance(ref, hyp) / max(len(ref), 1), "s": seconds,
                     "cjk": cjk, "umlauts": sum(hyp.count(c) for c in "äöüßÄÖÜ"),
                     "umlauts_ref": sum(ref.count(c) for c in "äöüßÄÖÜ"), "sample": hyp[:120]})
    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"engine": engine, "dpi": dpi, "import_s": import_s, "rows": rows,
                      "max_rss_mb": max(rss_self, rss_children)}))


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=6, help="English pages (one German page is added)")
    parser.add_argument("--memory-mb", type=int, default=1024)
    parser.add_argument("--engines", default="tesseract,rapidocr")
    parser.add_argument("--dpi", default="150,300")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "DPI"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.pages, args.memory_mb)
        return
    for engine in args.engines.split(","):
        for dpi in (int(d) for d in args.dpi.split(",")):
            proc = subprocess.run(
                [sys.executable, "-m", __spec__.name, "--child", engine, str(dpi), "--pages", str(args.pages),
                 "--memory-mb", str(args.memory_mb)], capture_output=True, text=True, check=False, cwd=REPO,
            )
            if proc.returncode != 0:
                print(f"{engine} @ {dpi} dpi: FAILED under {args.memory_mb} MiB: {proc.stderr[-400:]}")
                continue
            report = json.loads(proc.stdout.strip().splitlines()[-1])
            ok = [r for r in report["rows"] if "cer" in r]
            errors = [r["error"] for r in report["rows"] if "error" in r]
            en = [r for r in ok if r["lang"] == "en"]
            de = [r for r in ok if r["lang"] == "de"]
            print(f"{engine:9s} {dpi} dpi: CER en {_mean(en, 'cer'):.2%} de {_mean(de, 'cer'):.2%}  "
                  f"s/page {_mean(ok, 's'):.2f}  import {report['import_s']:.2f}s  "
                  f"max RSS {report['max_rss_mb']:.0f} MiB  "
                  f"CJK chars {sum(r['cjk'] for r in ok)}  umlauts {sum(r['umlauts'] for r in de)}/"
                  f"{sum(r['umlauts_ref'] for r in de)}  errors {errors[:1]}")
            for r in de:
                print(f"    de: {r['sample']}")


if __name__ == "__main__":
    main()
