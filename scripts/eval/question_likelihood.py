"""Question likelihood (UPR) under Geri's embedded model: a reranker of Freki's sources and an answer-gate feature?

UPR (Sachan et al. 2022) ranks a passage by log P(question | passage) under a causal LM, with the prompt
``"Passage: {p}\\nPlease write a question based on this passage.\\nQuestion:"``. ``collect`` retrieves
Freki's top ``--top-k`` sources per question of ``../shared/eval/squad-answers`` exactly as
``scripts/eval/answers.py --retrieval-only`` does (same corpus growth, cache and gate evidence), then scores
the question's tokens after each source's prompt with SmolLM2 (``EmbeddedBackend.score_continuations``),
and once after an empty passage (the question's prior, for PMI); it also times Geri's own reranker
(geri/answering/source_rerank.py, ``answering.rerank_margin``) on the same sources. Records are JSON lines,
so ``evaluate`` reruns offline:

* reranking: top-1 = gold paragraph on answerable questions, Freki's order, the LM's order, and mixes;
* gate: abstention on unanswerable / false abstention on answerable questions, Geri's gate (0191) alone
  and with a floor on the question's PMI under the best source, chosen over every file at once (the
  highest worst-case abstention whose false abstention stays within ``--budget`` in every file).

    .venv/bin/python -m scripts.eval.question_likelihood collect --split dev --grow 1 --out ql-dev-1.jsonl
    .venv/bin/python -m scripts.eval.question_likelihood collect --split dev --grow 6 --out ql-dev-6.jsonl
    .venv/bin/python -m scripts.eval.question_likelihood evaluate ql-dev-1.jsonl ql-dev-6.jsonl
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

from geri.answering.evidence import Gate
from geri.answering.source_rerank import rerank_sources
from geri.settings import GeriSettings
from odin_client import OdinClient, OdinSettings
from scripts.evalsets.answer_records import evidence_of, gate_answers
from scripts.evalsets.harness import data_dir_for, eval_settings, freki_server, index_corpus, running_freki
from scripts.evalsets.squad_answers import load, split_of

PROMPT = "Passage: {passage}\nPlease write a question based on this passage.\nQuestion:"
_ANSWERING = GeriSettings().answering
TODAY = Gate(_ANSWERING.min_score, _ANSWERING.min_evidence, _ANSWERING.coverage_weight)


def collect(args: argparse.Namespace) -> None:
    """Retrieve and score every question of the split; one JSON line per question to ``args.out``."""
    from geri.backends.embedded import EmbeddedBackend

    backend = EmbeddedBackend(GeriSettings(backend="embedded", embedded_threads=args.threads))
    started = time.perf_counter()
    backend.prepare()
    print(f"model loaded in {time.perf_counter() - started:.1f} s; load {os.getloadavg()[0]:.2f}", flush=True)
    corpus, questions = load(args.grow, args.distractors)
    questions = [q for q in questions if split_of(q["_id"]) == args.split]
    name = "squad-answers" if args.grow == 1 else f"squad-answers-{args.distractors}{args.grow}"
    data_dir = data_dir_for(name, corpus, eval_settings(Path(".")))
    with running_freki(eval_settings(data_dir)) as stub:
        index_corpus(stub, corpus, data_dir)
    with freki_server(eval_settings(data_dir)) as freki, OdinClient(
            OdinSettings(freki_target=freki, geri_target="127.0.0.1:1", answer_min_score=0.0)) as client, \
            args.out.open("w", encoding="utf-8") as out:
        for i, q in enumerate(questions, 1):
            retrieval = client.retrieve(q["question"], top_k=args.top_k)
            found = retrieval.sources
            record: dict[str, Any] = {
                "id": q["_id"], "answerable": q["answerable"], "gold": q["gold_doc"], "question": q["question"],
                "docs": [s.document_id for s in found], "best_score": max((s.score for s in found), default=0.0),
                "answered": True, **evidence_of(q["question"], found, len(found))}
            started = time.perf_counter()
            tail = [" " + q["question"].strip()]
            record["prior"] = backend.score_continuations(PROMPT.format(passage=""), tail)[0]
            record["ll"] = [backend.score_continuations(PROMPT.format(passage=s.content.strip()), tail)[0]
                            for s in found]
            record["ms"] = (time.perf_counter() - started) * 1000
            started = time.perf_counter()  # Geri's own reranker (answering.source_reranker) on these sources
            ranked = sorted(retrieval.context.documents, key=lambda d: -d.relevance_score)
            rerank_sources(q["question"], ranked, backend, _ANSWERING.rerank_margin)
            record["rerank_ms"] = (time.perf_counter() - started) * 1000
            out.write(json.dumps(record) + "\n")
            out.flush()
            if i % 25 == 0:
                print(f"  {i}/{len(questions)} questions; load {os.getloadavg()[0]:.2f}", flush=True)


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def lm_scores(record: dict[str, Any], kind: str) -> list[float]:
    """Per source: ``sum`` / ``mean`` log P(question | source), or ``pmi-sum`` / ``pmi-mean`` (minus the
    same under an empty passage)."""
    prior = record["prior"]
    if kind == "sum":
        return [sum(t) for t in record["ll"]]
    if kind == "mean":
        return [sum(t) / max(1, len(t)) for t in record["ll"]]
    if kind == "pmi-sum":
        return [sum(t) - sum(prior) for t in record["ll"]]
    if kind == "pmi-mean":
        return [(sum(t) - sum(prior)) / max(1, len(t)) for t in record["ll"]]
    raise ValueError(kind)


Ranker = Callable[[dict[str, Any]], int]


def rankers() -> dict[str, Ranker]:
    """Name -> the index of the source each method puts first."""
    def argmax(values: list[float]) -> int:
        return max(range(len(values)), key=lambda i: values[i]) if values else 0

    def lm(kind: str) -> Ranker:
        return lambda r: argmax(lm_scores(r, kind))

    def mixed(kind: str, w: float) -> Ranker:
        return lambda r: argmax([s + w * v for s, v in zip(r["scores"], lm_scores(r, kind), strict=False)])

    # Per question the PMI differs from the plain log-probability by a constant, so it ranks alike; it
    # matters only when mixed with the retrieval score or compared across questions (the gate).
    out: dict[str, Ranker] = {"freki": lambda r: 0, "lm-sum": lm("sum"), "lm-mean": lm("mean")}
    out.update({f"freki+{w}*pmi-mean": mixed("pmi-mean", w) for w in (0.02, 0.05, 0.1, 0.2)})
    out.update({f"freki+{w}*pmi-sum": mixed("pmi-sum", w) for w in (0.005, 0.01, 0.02)})
    for margin in (0.02, 0.05, 0.07, 0.1, 0.2):
        def within(r: dict[str, Any], m: float = margin) -> int:
            values = lm_scores(r, "mean")
            near = [i for i, s in enumerate(r["scores"]) if s >= r["scores"][0] - m] if r["scores"] else [0]
            return max(near, key=lambda i: values[i]) if values else 0
        out[f"lm-mean within {margin}"] = within
    return out


def top1(records: list[dict[str, Any]], ranker: Ranker) -> float:
    """Share of answerable questions whose first source (after ``ranker``) is the gold paragraph."""
    answerable = [r for r in records if r["answerable"]]
    return sum(bool(r["docs"]) and r["docs"][ranker(r)] == r["gold"] for r in answerable) / max(1, len(answerable))


def rates(records: list[dict[str, Any]], answers_fn: Callable[[dict[str, Any]], bool]) -> tuple[float, float]:
    """(abstention on unanswerable, false abstention on answerable)."""
    un = [r for r in records if not r["answerable"]]
    an = [r for r in records if r["answerable"]]
    return (sum(not answers_fn(r) for r in un) / max(1, len(un)), sum(not answers_fn(r) for r in an) / max(1, len(an)))


def gate_feature(record: dict[str, Any], kind: str) -> float:
    """The LM feature the gate may floor: PMI of the question under Freki's first source (``top-``) or its
    best source (``max-``)."""
    where, measure = kind.split(":")
    values = lm_scores(record, measure)
    if not values:
        return float("-inf")
    return values[0] if where == "top" else max(values)


def floored(gate: Gate, kind: str, threshold: float) -> Callable[[dict[str, Any]], bool]:
    """Does ``gate`` answer the record's question and the LM feature ``kind`` reach ``threshold``?"""
    return lambda r: gate_answers(r, gate) and gate_feature(r, kind) >= threshold


def evaluate(args: argparse.Namespace) -> None:
    """Print reranking and gate tables for every records file."""
    files = {p.name: _read(p) for p in args.records}
    print("| ranker | " + " | ".join(f"{n}: top-1 gold" for n in files) + " |\n|---|" + "---|" * len(files))
    for name, ranker in rankers().items():
        print(f"| {name} | " + " | ".join(f"{top1(rs, ranker):.3f}" for rs in files.values()) + " |")
    print("\n| gate | " + " | ".join(f"{n}: abstention / false abstention" for n in files) + " |\n|---|"
          + "---|" * len(files))
    today = [rates(rs, lambda r: gate_answers(r, TODAY)) for rs in files.values()]
    print("| today (0191) | " + " | ".join(f"{a:.3f} / {fa:.3f}" for a, fa in today) + " |")
    budget = max(args.budget, max(fa for _, fa in today))
    for kind in ("top:pmi-mean", "top:pmi-sum", "max:pmi-mean", "max:pmi-sum"):
        values = sorted({round(gate_feature(r, kind), 2) for rs in files.values() for r in rs})
        rows = []
        for t in values:
            per = [rates(rs, floored(TODAY, kind, t)) for rs in files.values()]
            if all(fa <= budget for _, fa in per):
                rows.append((min(a for a, _ in per), -max(fa for _, fa in per), -t, per))
        for _, _, neg_t, per in sorted(rows, reverse=True)[: args.top]:
            print(f"| today and {kind} ≥ {-neg_t:.2f} | " + " | ".join(f"{a:.3f} / {fa:.3f}" for a, fa in per) + " |")
    # Two knobs: the evidence floor moves with the LM floor (a PMI floor may let a lower evidence floor pass).
    kind, rows2 = "top:pmi-mean", []
    for evidence in [e / 100 for e in range(0, 91, 2)]:
        gate = Gate(TODAY.min_score, evidence, TODAY.coverage_weight)
        for t in [x / 20 for x in range(-10, 21)]:
            per = [rates(rs, floored(gate, kind, t)) for rs in files.values()]
            if all(fa <= budget for _, fa in per):
                rows2.append((min(a for a, _ in per), -max(fa for _, fa in per), evidence, t, per))
    for _, _, evidence, t, per in sorted(rows2, key=lambda r: (-r[0], -r[1]))[: args.top]:
        print(f"| min_evidence {evidence:.2f} and {kind} ≥ {t:.2f} | "
              + " | ".join(f"{a:.3f} / {fa:.3f}" for a, fa in per) + " |")
    if args.at:
        kind, t = args.at[0], float(args.at[1])
        per = [rates(rs, floored(TODAY, kind, t)) for rs in files.values()]
        print(f"| chosen: today and {kind} ≥ {t:.2f} | " + " | ".join(f"{a:.3f} / {fa:.3f}" for a, fa in per) + " |")
    for name, rs in files.items():
        ms = [r["ms"] for r in rs]
        print(f"{name}: scoring ms per question p50 {statistics.median(ms):.0f}, "
              f"p90 {statistics.quantiles(ms, n=10)[-1]:.0f} ({len(rs)} questions)")
        if all("rerank_ms" in r for r in rs):
            ms = [r["rerank_ms"] for r in rs]
            print(f"{name}: Geri's reranker ms per question p50 {statistics.median(ms):.0f}, mean "
                  f"{statistics.mean(ms):.0f}, p90 {statistics.quantiles(ms, n=10)[-1]:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="retrieve and score; write JSON lines")
    c.add_argument("--split", choices=["dev", "test"], default="dev")
    c.add_argument("--grow", type=int, default=1, metavar="N", help="the paragraphs among (N-1) x 244 distractors")
    c.add_argument("--distractors", choices=["wiki", "scifact"], default="wiki")
    c.add_argument("--top-k", type=int, default=5)
    c.add_argument("--threads", type=int, default=1, help="torch threads for the model")
    c.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("evaluate", help="reranking and gate tables from records files")
    e.add_argument("records", type=Path, nargs="+")
    e.add_argument("--budget", type=float, default=0.1, help="false abstention allowed in every file (at least "
                   "today's gate's own)")
    e.add_argument("--top", type=int, default=3, help="best thresholds shown per feature")
    e.add_argument("--at", nargs=2, metavar=("FEATURE", "THRESHOLD"),
                   help="also this fixed rule, e.g. top:pmi-mean 0.1")
    args = parser.parse_args()
    collect(args) if args.command == "collect" else evaluate(args)


if __name__ == "__main__":
    main()
