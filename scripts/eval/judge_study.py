"""Study a judge model for the answer gate, offline, on gate_study's records and views (decision 0420).

The judge reads the source(s) Geri's source rerank puts first and says whether they answer the question, in
one forward pass: ``yesno`` J = P(yes) / (P(yes) + P(no)) of the next token after a chat prompt; ``extract``
J = 1 - P(the answer starts "unanswerable") after an answer-only-from-the-passage prompt; ``check`` that J, or
0 when the greedy answer does not quote the passage; a ``2`` suffix shows the first two sources.

* ``judge`` adds J to ``<records>.judge-<model>.json`` beside each records file (view ``id|kind`` as in
  ``.rerank.json`` -> {variant: J}; ``--band``: only views whose gate sum is that close to 0.76).
* ``study`` (dev only): AUCs of the gate's sum, J and their sums; band rules (today's gate outside
  ``0.76 ± band``, ``J >= cut`` inside) chosen by the largest worst-case margin to the goals over the files
  (gate_study's ``--centre``), also out-of-fold; a logistic model of (sum, J) by 5-fold cross-validation.
* ``table``: fixed rules (JSON {name: {t, band, cut, variant}}) over any files (test once, after choosing).

    python -m scripts.eval.judge_study judge ret-dev-w1.jsonl ret-dev-w6.jsonl --augment --model qwen --gguf q.gguf
    python -m scripts.eval.judge_study study ret-dev-w1.jsonl ret-dev-w6.jsonl --augment --model qwen --rules r.json
    python -m scripts.eval.judge_study table ret-test-w1.jsonl ret-test-w6.jsonl --model qwen --rules r.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scripts.eval.gate_study import SHOWN, View, rates, tops, views

SYSTEM = "You check whether a passage answers a question. Reply with yes or no only."
ASK = ("Passage: {passage}\n\nQuestion: {question}\n"
       "Does the passage contain the answer to the question? Answer yes or no.")
EXTRACT_SYSTEM = "Answer only from the passage. If the passage does not answer the question, say 'unanswerable'."
EXTRACT = "Passage: {passage}\n\nQuestion: {question}\nAnswer briefly."
MAX_CHARS = 3000  # a source as the answering model is shown it (source_rerank.MAX_PASSAGE_CHARS)
GOAL = (0.9, 0.1)
TODAY = 0.76  # answering.reranked_min_evidence
NEAR_BAND = 0.15  # the widest band studied: views this close to TODAY are judged (judge --band)


class Judge:
    """A chat model loaded with transformers from a GGUF file, asked one next-token question per prompt."""

    def __init__(self, gguf: Path | None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from geri.backends.embedded import default_model_path

        gguf = gguf or default_model_path()  # SmolLM2, the model Geri already loads
        folder, name = str(gguf.parent), gguf.name
        started = time.perf_counter()
        self.torch = torch
        self.tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        self.model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.bfloat16).eval()
        self.load_s = time.perf_counter() - started
        first = lambda words: sorted({self.tok.encode(w, add_special_tokens=False)[0] for w in words})  # noqa: E731
        self.yes, self.no = first(["yes", "Yes", " yes", " Yes"]), first(["no", "No", " no", " No"])
        self.unanswerable = first(["unanswerable", "Unanswerable", "'unanswerable", "'Unanswerable"])

    def _next(self, system: str, user: str) -> tuple[Any, int, Any]:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        made: Any = self.tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        ids = made if isinstance(made, self.torch.Tensor) else made["input_ids"]
        with self.torch.inference_mode():
            logits = self.model(ids).logits[0, -1].float()
        return self.torch.softmax(logits, -1), int(ids.shape[1]), ids

    def _extracted(self, ids: Any, passage: str) -> bool:
        """Does the greedy answer (12 tokens at most) quote the passage: at least half its words in it?"""
        with self.torch.inference_mode():
            out = self.model.generate(ids, max_new_tokens=12, do_sample=False)
        answer = terms_of(str(self.tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)))
        return bool(answer) and len(answer & terms_of(passage)) >= len(answer) / 2

    def score(self, variant: str, question: str, passages: list[str]) -> tuple[float, int, float]:
        """(J, prompt tokens, milliseconds) of ``variant`` for ``question`` over ``passages`` (best first)."""
        started = time.perf_counter()
        text = "\n\n".join(f"[{i + 1}] " + " ".join(p.split())[:MAX_CHARS] for i, p in enumerate(passages)) \
            if len(passages) > 1 else " ".join(passages[0].split())[:MAX_CHARS]
        if variant.startswith(("extract", "check")):
            probs, n, ids = self._next(EXTRACT_SYSTEM, EXTRACT.format(passage=text, question=question))
            j = 1.0 - float(probs[self.unanswerable].sum())
            if variant.startswith("check") and not self._extracted(ids, text):
                j = 0.0
        else:
            probs, n, _ = self._next(SYSTEM, ASK.format(passage=text, question=question))
            yes, no = float(probs[self.yes].sum()), float(probs[self.no].sum())
            j = yes / (yes + no) if yes + no > 0 else 0.5
        return j, n, 1000 * (time.perf_counter() - started)


def terms_of(text: str) -> set[str]:
    """Lower-case words and numbers of ``text``."""
    return set(re.findall(r"\w+", text.lower()))


def first_sources(record: dict[str, Any], orders: dict[str, list[int]], augment: bool) -> dict[str, list[str]]:
    """View key -> the texts of its sources in Geri's reranked order (as gate_study's ``rr_`` features)."""
    out = {}
    for kind, (found, _) in tops(record, augment).items():
        order = orders.get(f"{record['id']}|{kind}", list(range(len(found))))
        order = [i for i in order if i < SHOWN] + [i for i in order if i >= SHOWN]
        out[f"{record['id']}|{kind}"] = [found[i][2] for i in order]
    return out


def keyed_views(path: Path, augment: bool) -> list[tuple[str, View]]:
    """gate_study's views of ``path`` with their keys (``id|kind``; views follow records and ``tops`` order)."""
    keys = [f"{r['id']}|{kind}" for r in map(json.loads, path.read_text().splitlines()) for kind in tops(r, augment)]
    all_views = views(path, augment)
    assert len(keys) == len(all_views), path
    return list(zip(keys, all_views, strict=True))


def judge(paths: list[Path], model: str, gguf: Path | None, variants: list[str], augment: bool,
          band: float | None) -> None:
    """Write (add to) each file's judge scores beside it; with ``band`` only for views whose gate sum is within
    ``band`` of today's threshold (the only ones a band rule asks the judge about). Reports cost."""
    scorer = Judge(gguf)
    print(f"{model}: loaded in {scorer.load_s:.1f} s", flush=True)
    seen: dict[str, tuple[float, int, float]] = {}
    fresh: list[tuple[int, float]] = []
    for path in paths:
        beside = path.with_suffix(".rerank.json")
        orders = json.loads(beside.read_text()) if beside.exists() else {}
        target = path.with_suffix(f".judge-{model}.json")
        out: dict[str, dict[str, float]] = json.loads(target.read_text()) if target.exists() else {}
        wanted = {k for k, v in keyed_views(path, augment)
                  if band is None or (gate_sum(v.features) > 0 and abs(gate_sum(v.features) - TODAY) <= band)}
        for line in path.read_text().splitlines():
            r = json.loads(line)
            for key, texts in first_sources(r, orders, augment).items():
                if key not in wanted:
                    continue
                for variant in variants:
                    shown = texts[:2] if variant.endswith("2") else texts[:1]
                    if not shown:
                        continue  # nothing retrieved: the gate abstains without a judge
                    memo = hashlib.sha1(json.dumps([variant, r["question"], shown]).encode()).hexdigest()
                    if memo not in seen:
                        seen[memo] = scorer.score(variant, r["question"], shown)
                        fresh.append((seen[memo][1], seen[memo][2]))
                    out.setdefault(key, {}).update({variant: seen[memo][0], f"{variant}_tokens": seen[memo][1]})
        target.write_text(json.dumps(out))
        print(f"{path.name}: {len(wanted)} views judged, {len(fresh)} prompts run so far", flush=True)
    if ms := sorted(m for _, m in fresh):
        print(f"latency p50 {ms[len(ms) // 2]:.0f} ms p99 {ms[int(0.99 * (len(ms) - 1))]:.0f} ms max {ms[-1]:.0f} ms,"
              f" prompt tokens p50 {statistics.median(n for n, _ in fresh):.0f} max {max(n for n, _ in fresh)}")


def judged(path: Path, augment: bool, model: str) -> list[tuple[View, dict[str, float]]]:
    """gate_study's views of ``path`` with their judge scores."""
    scores = json.loads(path.with_suffix(f".judge-{model}.json").read_text())
    fold = lambda key: float(int(hashlib.sha1(key.split("|")[0].encode()).hexdigest(), 16) % 5)  # noqa: E731
    return [(v, {**scores.get(k, {}), "_fold": fold(k)}) for k, v in keyed_views(path, augment)]


def gate_sum(f: dict[str, float]) -> float:
    """Geri's gate after the rerank: the first source's score + 0.6 coverage, held to Freki's best >= 0.25."""
    return f.get("rr_score", 0.0) + 0.6 * f.get("rr_coverage", 0.0) if f["score"] >= 0.25 else 0.0


def band_rule(rule: dict[str, Any]) -> Any:
    """(features, judge scores) -> answer? Today's gate outside ``t ± band``, ``J >= cut`` inside it."""
    def answers(f: dict[str, float], j: dict[str, float]) -> bool:
        s = gate_sum(f)
        if s <= 0.0 or abs(s - rule["t"]) > rule["band"] or rule["variant"] not in j:
            return s >= rule["t"]
        return j[rule["variant"]] >= rule["cut"]
    return answers


def auc(pos: list[float], neg: list[float]) -> float:
    """P(a random answerable view outscores a random unanswerable one), ties half."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg)) if pos and neg else float("nan")


def sizes(rows: list[tuple[View, dict[str, float]]]) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per file: (real views, answerable + augmented views), as gate_study's ``groups``."""
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    for name in dict.fromkeys(v.file for v, _ in rows):
        mine = [(v, j) for v, j in rows if v.file == name]
        out[name] = ([x for x in mine if x[0].kind == "real"],
                     [x for x in mine if x[0].kind == "aug" or x[0].answerable])
    return out


def rule_rates(rows: list[tuple[View, dict[str, float]]], answers: Any) -> tuple[float, float]:
    """(abstention on unanswerable, false abstention on answerable) of ``answers`` over ``rows``."""
    as_views = [View(v.file, v.kind, v.answerable, {**v.features, "_i": float(i)}) for i, (v, _) in enumerate(rows)]
    return rates(as_views, lambda f, _t: answers(rows[int(f["_i"])][0].features, rows[int(f["_i"])][1]), 0.0)


def margin(rows: list[tuple[View, dict[str, float]]], answers: Any) -> float:
    """The worst margin to the goals over files, unanswerable real and augmented pooled (gate_study.centre)."""
    worst = 1.0
    for real, aug in sizes(rows).values():
        unanswerable = [x for x in real + aug if not x[0].answerable]
        worst = min(worst, rule_rates(unanswerable, answers)[0] - GOAL[0], GOAL[1] - rule_rates(real, answers)[1])
    return worst


def logistic_cv(rows: list[tuple[View, dict[str, float]]], variant: str) -> list[float]:
    """Out-of-fold P(answerable) of a logistic model on (gate sum, J), 5 folds by question."""
    from sklearn.linear_model import LogisticRegression

    x = [[gate_sum(v.features), j.get(variant, 0.0)] for v, j in rows]
    y, fold = [int(v.answerable) for v, _ in rows], [int(j["_fold"]) for _, j in rows]
    out = [0.0] * len(rows)
    for k in range(5):
        train = [i for i in range(len(rows)) if fold[i] != k]
        fit = LogisticRegression().fit([x[i] for i in train], [y[i] for i in train])
        for i in (i for i in range(len(rows)) if fold[i] == k):
            out[i] = float(fit.predict_proba([x[i]])[0][1])
    return out


def band_search(rows: list[tuple[View, dict[str, float]]], var: str) -> tuple[float, float, float, list[Any]]:
    """(worst margin, band, cut, ties): the band around TODAY and judge cut farthest inside the goals."""
    grid = [(m, b / 100, c / 100) for b in range(1, round(100 * NEAR_BAND) + 1) for c in range(5, 96, 5)
            for m in [margin(rows, band_rule({"t": TODAY, "band": b / 100, "cut": c / 100, "variant": var}))]]
    best = max(m for m, _, _ in grid)
    tied = sorted((b, c) for m, b, c in grid if m >= best - 1e-9)
    return best, *tied[len(tied) // 2], tied


def judge_alone(variant: str, f: dict[str, float], j: dict[str, float]) -> float:
    """J of ``variant``, held to Freki's best >= 0.25 like the gate."""
    return j.get(variant, 0.0) if gate_sum(f) > 0 else 0.0


def sum_and_judge(variant: str, weight: float, f: dict[str, float], j: dict[str, float]) -> float:
    """The gate's sum plus ``weight`` J."""
    return gate_sum(f) + weight * j.get(variant, 0.0)


def study(rows: list[tuple[View, dict[str, float]]], variants: list[str]) -> dict[str, dict[str, Any]]:
    """Print dev AUCs and the band search; return the band rule chosen per variant."""
    print("| score | " + " | ".join(sizes(rows)) + " | pooled |\n|---|" + "---|" * (len(sizes(rows)) + 1))
    signals: dict[str, Callable[[dict[str, float], dict[str, float]], float]] = {"gate sum": lambda f, j: gate_sum(f)}
    for var in variants:
        signals[f"J {var} (score >= 0.25)"] = partial(judge_alone, var)
        for w in (0.1, 0.2, 0.4):
            signals[f"sum + {w} J {var}"] = partial(sum_and_judge, var, w)
    near = [x for x in rows if gate_sum(x[0].features) > 0 and abs(gate_sum(x[0].features) - TODAY) <= NEAR_BAND]
    for name, signal in [*signals.items(), *((f"{n}, within ±{NEAR_BAND}", s) for n, s in signals.items())]:
        cells: list[str] = []
        mine = near if "within" in name else rows
        for part in [*(r + [x for x in a if x[0].kind == "aug"] for r, a in sizes(mine).values()), mine]:
            a = auc([signal(v.features, j) for v, j in part if v.answerable],
                    [signal(v.features, j) for v, j in part if not v.answerable])
            cells.append(f"{a:.3f} ({len(part)})" if "within" in name else f"{a:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    chosen = {"today": {"t": TODAY, "band": 0.0, "cut": 0.5, "variant": variants[0]}}
    print(f"today at {TODAY}: worst margin {margin(rows, band_rule(chosen['today'])):+.3f}")
    for var in variants:
        best, band, cut, tied = band_search(rows, var)
        chosen[f"band {var}"] = {"t": TODAY, "band": band, "cut": cut, "variant": var}
        print(f"band {var}: worst margin {best:+.3f} at band {band} cut {cut} ({len(tied)} tied: {tied[:6]}…)")
        decided: dict[int, bool] = {}  # out-of-fold: each question's views decided by the band chosen without it
        for k in range(5):
            _, b, c, _ = band_search([x for x in rows if x[1]["_fold"] != k], var)
            decided.update({i: band_rule({"t": TODAY, "band": b, "cut": c, "variant": var})(v.features, j)
                            for i, (v, j) in enumerate(rows) if j["_fold"] == k})
        oof = [(v, {**j, "_i": float(i)}) for i, (v, j) in enumerate(rows)]
        oof_margin = margin(oof, lambda f, j, d=decided: d[int(j["_i"])])
        print(f"band {var}, 5-fold out-of-fold: worst margin {oof_margin:+.3f}")
        if any(gate_sum(v.features) > 0 and var not in j for v, j in rows):
            continue  # judged only near the threshold (judge --band): no logistic model over every view
        probs = logistic_cv(rows, var)
        with_p = [(v, {**j, "_p": probs[i]}) for i, (v, j) in enumerate(rows)]
        cuts = [(margin(with_p, lambda f, j, c=c / 100: j["_p"] >= c), c / 100) for c in range(5, 96)]
        pos = [p for p, (v, _) in zip(probs, rows, strict=True) if v.answerable]
        neg = [p for p, (v, _) in zip(probs, rows, strict=True) if not v.answerable]
        print(f"logistic CV {var}: AUC {auc(pos, neg):.3f}, best worst margin {max(cuts)[0]:+.3f} at {max(cuts)[1]}")
    return chosen


def table(rows: list[tuple[View, dict[str, float]]], chosen: dict[str, dict[str, Any]]) -> None:
    """Every rule: abstention / false abstention per file (real), augmented abstention, judge runs (in band)."""
    files = sizes(rows)
    print("| rule | " + " | ".join(f"{n} | aug | judged" for n in files) + " |\n|---|" + "---|---|---|" * len(files))
    for name, rule in chosen.items():
        cells = []
        for real, aug in files.values():
            a, fa = rule_rates(real, band_rule(rule))
            has_aug = any(x[0].kind == "aug" for x in aug)
            ran = sum(0 < gate_sum(v.features) and abs(gate_sum(v.features) - rule["t"]) <= rule["band"]
                      for v, _ in real)
            aug_abst = rule_rates([x for x in aug if not x[0].answerable], band_rule(rule))[0]
            cells.append(f"{a:.3f} / {fa:.3f} | " + (f"{aug_abst:.3f}" if has_aug else "–") + f" | {ran}/{len(real)}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["judge", "study", "table"])
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--augment", action="store_true", help="add gold-article-less views (dev only)")
    parser.add_argument("--model", default="smollm2", help="the judge's name in the files it writes and reads")
    parser.add_argument("--gguf", type=Path, help="judge: the chat model's GGUF file (default: Geri's SmolLM2)")
    parser.add_argument("--variants", default="yesno,extract")
    parser.add_argument("--band", type=float, help="judge: only views whose gate sum is this close to 0.76")
    parser.add_argument("--rules", type=Path, help="study: write the chosen rules here; table: read them")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if args.command == "judge":
        judge(args.records, args.model, args.gguf, variants, args.augment, args.band)
        return
    rows = [x for p in args.records for x in judged(p, args.augment, args.model)]
    if args.command == "study":
        chosen = study(rows, variants)
        if args.rules:
            args.rules.write_text(json.dumps(chosen, indent=1))
    else:
        chosen = json.loads(args.rules.read_text())
    table(rows, chosen)


if __name__ == "__main__":
    main()
