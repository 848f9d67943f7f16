"""Does the question's likelihood given a sentence choose the short answer's sentence better than the rules?

Offline, over the answerable squad-answers questions of one split *with their gold paragraph* (no retrieval,
no generation), like scripts/eval/spans.py. The rules of geri/answering/spans.py rank the paragraph's
sentences (``ranked_sentences``); for each of their top ``--top-sentences``, ``collect`` records the rules'
score, whether the sentence holds a gold answer (SQuAD normalisation), the mean log-probability of the
question's tokens after the source reranker's prompt with that sentence as the passage
(geri/answering/sentence_choice.py ``sentence_prompt``: P(question | sentence), UPR), and the span Geri's own
chooser picks in that sentence (geri/answering/span_scoring.py ``model_span``: the model's consensus over the
rules' pool), all through ``EmbeddedBackend`` with Geri's settings. ``evaluate`` then compares ways of choosing
the sentence: sentence accuracy (the chosen one holds a gold answer) and SQuAD EM/F1 of the whole chooser,
each paired against the rules' sentence (bootstrap over questions):

    .venv/bin/python -m scripts.eval.sentences collect --split dev --out sent-dev.jsonl
    .venv/bin/python -m scripts.eval.sentences evaluate sent-dev.jsonl
    .venv/bin/python -m scripts.eval.sentences cost --split dev

Decision record: docs/decisions/0425-sentence-choice-by-question-likelihood.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from geri.answering.sentence_choice import sentence_prompt
from geri.answering.source_rerank import asked_text
from geri.answering.sources import split_sentences
from geri.answering.span_scoring import model_span
from geri.answering.spans import ranked_sentences, scored_spans
from scripts.common import p50_p90, print_latencies
from scripts.evalsets.replica import paired_bootstrap
from scripts.evalsets.squad_answers import f1, load, normalize, split_of


def _holds(sentence: str, answers: list[str]) -> bool:
    text = normalize(sentence)
    return any(normalize(a) and normalize(a) in text for a in answers)


def collect(split: str, out: Path, top_sentences: int, limit: int) -> None:
    """Write one record per answerable question of ``split``: its top sentences as the rules rank them, with
    the question's likelihood after each and the span Geri's chooser picks in each."""
    from geri.backends.embedded import EmbeddedBackend
    from geri.settings import GeriSettings

    backend = EmbeddedBackend(GeriSettings())
    started = time.perf_counter()
    backend.prepare()
    print(f"model loaded in {time.perf_counter() - started:.1f} s; load {os.getloadavg()[0]:.2f}", flush=True)
    corpus, questions = load()
    chosen = [q for q in questions if q["answerable"] and split_of(q["_id"]) == split][: limit or None]
    with out.open("w", encoding="utf-8") as sink:
        for i, q in enumerate(chosen, 1):
            question, answers = q["question"], q["answers"]
            sentences = split_sentences(corpus[q["gold_doc"]])
            ranked = ranked_sentences(question, sentences, 1)
            asked = asked_text(question)
            record: dict[str, Any] = {"id": q["_id"], "question": question, "answers": answers,
                                      "any_holds": any(_holds(s, answers) for s in sentences), "sentences": []}
            for number, _, score in ranked[:top_sentences]:
                sentence = sentences[number - 1]
                started = time.perf_counter()
                ll = backend.score_continuations(sentence_prompt(sentence), [f" {asked}"])[0]
                ms = 1000 * (time.perf_counter() - started)
                spans = [s for s, _ in scored_spans(question, sentence)]
                record["sentences"].append({
                    "number": number, "score": score, "holds": _holds(sentence, answers), "ll": ll, "ms": ms,
                    "rules_span": spans[0] if spans else "",
                    "span": model_span(question, sentence, backend, ranked_spans=spans)})
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            if i % 25 == 0:
                print(f"  {i}/{len(chosen)}; load {os.getloadavg()[0]:.2f}", flush=True)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("-inf")


Chooser = Callable[[list[dict[str, Any]]], int]


def _rules(items: list[dict[str, Any]]) -> int:
    return 0


def _within(margin: float, top: int = 3) -> Chooser:
    """The likeliest question among the rules' top ``top`` whose rules score is within ``margin`` of the best."""
    def choose(items: list[dict[str, Any]]) -> int:
        near = [k for k, s in enumerate(items[:top]) if s["score"] >= items[0]["score"] - margin]
        return max(near, key=lambda k: (_mean(items[k]["ll"]), -k))
    return choose


def _mixed(weight: float, top: int = 3) -> Chooser:
    """The best of the rules' top ``top`` by rules score + ``weight`` × mean log P(question | sentence)."""
    def choose(items: list[dict[str, Any]]) -> int:
        return max(range(min(top, len(items))),
                   key=lambda k: (items[k]["score"] + weight * _mean(items[k]["ll"]), -k))
    return choose


def choosers() -> dict[str, Chooser]:
    """The ways of choosing the sentence compared (few knobs: a margin or a weight, and how many sentences)."""
    out: dict[str, Chooser] = {"rules": _rules}
    for top in (2, 3):
        out[f"lm top{top}"] = _within(float("inf"), top)
        for margin in (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0):
            out[f"lm within {margin:g} top{top}"] = _within(margin, top)
        for weight in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0):
            out[f"rules+{weight:g}*lm top{top}"] = _mixed(weight, top)
    return out


def evaluate(paths: list[Path], only: list[str], base: str) -> None:
    """Print sentence accuracy and EM/F1 of each chooser per file, and the paired F1 difference to ``base``."""
    table = choosers()
    for path in paths:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        with_any = [r for r in records if r["sentences"]]
        print(f"\n{path}: {len(records)} questions; a gold sentence among the rules' top 2 / 3: "
              f"{sum(any(s['holds'] for s in r['sentences'][:2]) for r in with_any) / len(records):.3f} / "
              f"{sum(any(s['holds'] for s in r['sentences'][:3]) for r in with_any) / len(records):.3f}")
        per: dict[str, dict[str, tuple[float, float, float]]] = {}
        for name, chooser in table.items():
            if only and name not in only and name != base:
                continue
            per[name] = {}
            for r in records:
                if not r["sentences"]:
                    per[name][r["id"]] = (0.0, 0.0, 0.0)
                    continue
                item = r["sentences"][chooser(r["sentences"])]
                em = max(float(normalize(item["span"]) == normalize(a)) for a in r["answers"])
                per[name][r["id"]] = (float(item["holds"]), em, max(f1(item["span"], a) for a in r["answers"]))
        print("| chooser | sentence accuracy | F1 | EM | F1 − rules [95 % CI] | better / worse |\n"
              "|---|---|---|---|---|---|")
        for name, scores in per.items():
            acc, em, f1_ = (statistics.mean(v[k] for v in scores.values()) for k in range(3))
            diff, low, high = paired_bootstrap({q: v[2] for q, v in per[base].items()},
                                               {q: v[2] for q, v in scores.items()}, resamples=5000)
            better = sum(scores[q][2] > per[base][q][2] for q in scores)
            worse = sum(scores[q][2] < per[base][q][2] for q in scores)
            print(f"| {name} | {acc:.3f} | {f1_:.3f} | {em:.3f} | {diff:+.3f} [{low:+.3f}, {high:+.3f}] | "
                  f"{better} / {worse} |")
        ms = [sum(s["ms"] for s in r["sentences"][:2]) for r in records if len(r["sentences"]) > 1]
        if ms:
            p50, p90 = p50_p90(ms)
            print(f"scoring two sentences, ms per question: p50 {p50:.0f}, "
                  f"p90 {p90:.0f} ({len(ms)} questions with two or more sentences)")


def cost(split: str) -> None:
    """Print p50 / p90 ms of the sentence choice Geri makes (two sentences scored) and of its span choice."""
    from geri.answering.sentence_choice import likeliest_sentence
    from geri.backends.embedded import EmbeddedBackend
    from geri.settings import GeriSettings

    backend = EmbeddedBackend(GeriSettings())
    backend.prepare()
    corpus, questions = load()
    ms: dict[str, list[float]] = {"sentence choice": [], "span choice": []}
    for q in (q for q in questions if q["answerable"] and split_of(q["_id"]) == split):
        sentences = split_sentences(corpus[q["gold_doc"]])
        ranked = [(sentences[n - 1], score) for n, _, score in ranked_sentences(q["question"], sentences, 1)]
        if len(ranked) < 2:
            continue
        started = time.perf_counter()
        chosen = likeliest_sentence(q["question"], ranked, backend)
        ms["sentence choice"].append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        model_span(q["question"], ranked[chosen][0], backend)
        ms["span choice"].append(1000 * (time.perf_counter() - started))
    print(f"{len(ms['span choice'])} questions; load {os.getloadavg()[0]:.2f}")
    print_latencies(ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--split", choices=("dev", "test"), default="dev")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--top-sentences", type=int, default=3)
    c.add_argument("--limit", type=int, default=0)
    t = sub.add_parser("cost")
    t.add_argument("--split", choices=("dev", "test"), default="dev")
    e = sub.add_parser("evaluate")
    e.add_argument("records", type=Path, nargs="+")
    e.add_argument("--only", nargs="*", default=[])
    e.add_argument("--base", default="rules")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.split, args.out, args.top_sentences, args.limit)
    elif args.command == "cost":
        cost(args.split)
    else:
        evaluate(args.records, args.only, args.base)


if __name__ == "__main__":
    main()
