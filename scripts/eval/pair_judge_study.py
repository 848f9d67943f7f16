"""A chat model as a cross-encoder: P(yes) per (question, passage) over Freki's top four, offline (decision 0435).

No cross-encoder reranker ships in any package this project can install (decision 0435), so the closest
substitute is a chat model asked, once per pair, "does the passage contain the answer?": J = P(yes) /
(P(yes) + P(no)) of its next token (judge_study's ``yesno`` prompt). Like a cross-encoder's probability it
depends only on the pair, not on the corpus.

* ``score`` writes J for every distinct (question, passage) of the records files' top four to a JSON-lines
  cache (resumable; ``--shard i/n`` splits the pairs between processes), with tokens and seconds per pair.
* ``table`` reports per file: top-1 = gold when J reorders Freki's top four (against Freki's order and Geri's
  source rerank in ``.rerank.json``), AUCs of the best passage's J, the gate's sum after the rerank and their
  sum, and abstention / false abstention with the threshold on J chosen on the ``--dev`` files
  (gate_study's centre rule: the largest worst margin to 0.9 / 0.1 over the dev files).

    python -m scripts.eval.pair_judge_study score ret-test-w6.jsonl ret-dev-w6.jsonl --gguf q.gguf \
        --cache pairs.jsonl --shard 0/2
    python -m scripts.eval.pair_judge_study table --cache pairs.jsonl --dev ret-dev-w1.jsonl ret-dev-w6.jsonl \
        --test ret-test-w1.jsonl ret-test-w6.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from scripts.eval.gate_study import SHOWN, features
from scripts.eval.judge_study import ASK, GOAL, MAX_CHARS, SYSTEM, Judge, auc

THRESHOLDS = [x / 200 for x in range(201)]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pairs_of(paths: list[Path], seed: int | None) -> list[tuple[str, str, str, str]]:
    """Distinct (question id, passage id, question, passage) of the files' top four, in file order; with a
    seed, the files' questions in one seeded random order (a question's pairs together), so that a run
    stopped early has scored a random sample of every file's questions."""
    found = [r for path in paths for r in records(path)]
    if seed is not None:
        random.Random(seed).shuffle(found)
    seen: set[tuple[str, str]] = set()
    out = []
    for r in found:
        for pid, _, text in r["passages"][:SHOWN]:
            if (r["id"], str(pid)) not in seen:
                seen.add((r["id"], str(pid)))
                out.append((r["id"], str(pid), r["question"], text))
    return out


def load_cache(cache: Path) -> dict[tuple[str, str], dict[str, Any]]:
    if not cache.exists():
        return {}
    rows = (json.loads(line) for line in cache.read_text().splitlines() if line.strip())
    return {(d["q"], d["p"]): d for d in rows}


def score(paths: list[Path], gguf: Path | None, cache: Path, shard: int, shards: int, seed: int | None) -> None:
    """J for every pair of this shard not yet in the cache, appended one line per pair."""
    import torch

    torch.set_num_threads(1)  # the figure asked for: seconds per pair on one thread
    done = load_cache(cache)
    todo = [p for i, p in enumerate(pairs_of(paths, seed)) if i % shards == shard and (p[0], p[1]) not in done]
    print(f"{len(todo)} pairs to score in shard {shard}/{shards}", flush=True)
    judge = Judge(gguf)
    print(f"model loaded in {judge.load_s:.1f} s", flush=True)
    with cache.open("a") as out:
        for qid, pid, question, text in todo:
            started = time.perf_counter()
            probs, tokens, _ = judge._next(SYSTEM, ASK.format(passage=text[:MAX_CHARS], question=question))
            yes, no = float(probs[judge.yes].sum()), float(probs[judge.no].sum())
            row = {"q": qid, "p": pid, "J": yes / (yes + no) if yes + no > 0 else 0.5, "mass": yes + no,
                   "tokens": tokens, "s": round(time.perf_counter() - started, 3)}
            out.write(json.dumps(row) + "\n")
            out.flush()


def question_rows(path: Path, cache: dict[tuple[str, str], dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Per question whose top four are all scored: answerable, its J list, and the top-1 of Freki, Geri and
    the judge; and how many questions of the file had pairs not yet scored (left out)."""
    beside = path.with_suffix(".rerank.json")
    orders: dict[str, list[int]] = json.loads(beside.read_text()) if beside.exists() else {}
    out, missing = [], 0
    for r in records(path):
        top = [(str(i), float(s), str(t)) for i, s, t in r["passages"]]
        four = top[:SHOWN]
        js: list[float] = [cache[(r["id"], pid)]["J"] for pid, _, _ in four if (r["id"], pid) in cache]
        if len(js) < len(four):
            missing += 1
            continue
        order = orders.get(f"{r['id']}|real", list(range(len(top))))
        order = [i for i in order if i < SHOWN] + [i for i in order if i >= SHOWN]
        reranked = [top[i] for i in order if i < len(top)]
        f = features(r["question"], reranked) if reranked else {"score": 0.0, "coverage": 0.0}
        best = max(range(len(four)), key=lambda i: (js[i], -i)) if four else -1
        out.append({
            "answerable": bool(r["answerable"]), "gold": r.get("gold"), "J": js,
            "freki": four[0][0] if four else None, "geri": reranked[0][0] if reranked else None,
            "judge": four[best][0] if four else None, "max_j": max(js, default=0.0),
            "gate": (f["score"] + 0.6 * f["coverage"]) if top and top[0][1] >= 0.25 else 0.0,
        })
    return out, missing


def top1(rows: list[dict[str, Any]], who: str) -> float:
    ans = [r for r in rows if r["answerable"]]
    return sum(r[who] == r["gold"] for r in ans) / max(1, len(ans))


def rates(rows: list[dict[str, Any]], cut: float) -> tuple[float, float]:
    """(abstention on unanswerable, false abstention on answerable) when answering iff max J >= cut."""
    unans = [r for r in rows if not r["answerable"]]
    ans = [r for r in rows if r["answerable"]]
    return (sum(r["max_j"] < cut for r in unans) / max(1, len(unans)),
            sum(r["max_j"] < cut for r in ans) / max(1, len(ans)))


def centre(dev: dict[str, list[dict[str, Any]]]) -> tuple[float, float]:
    """The cut farthest inside the goals over every dev file: the middle of the best worst-margin plateau."""
    margins = []
    for cut in THRESHOLDS:
        worst = min(min(a - GOAL[0], GOAL[1] - fa) for a, fa in (rates(rows, cut) for rows in dev.values()))
        margins.append(worst)
    top = max(margins)
    tied = [c for c, m in zip(THRESHOLDS, margins, strict=True) if m >= top - 1e-9]
    return tied[len(tied) // 2], top


def table(cache_paths: list[Path], dev_paths: list[Path], test_paths: list[Path]) -> None:
    cache: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cache_paths:
        cache.update(load_cache(c))
    seconds = [d["s"] for d in cache.values()]
    tokens = [d["tokens"] for d in cache.values()]
    if seconds:
        q = statistics.quantiles(seconds, n=10)
        print(f"{len(seconds)} pairs scored: seconds per pair p50 {statistics.median(seconds):.2f}, p90 {q[-1]:.2f},"
              f" max {max(seconds):.2f}; prompt tokens p50 {statistics.median(tokens):.0f}, max {max(tokens)}")
    files: dict[str, list[dict[str, Any]]] = {}
    for path in dev_paths + test_paths:
        rows, missing = question_rows(path, cache)
        print(f"{path.name}: {len(rows)} questions scored ({sum(r['answerable'] for r in rows)} answerable),"
              f" {missing} not yet")
        if rows:
            files[path.name] = rows
    dev = {n: r for n, r in files.items() if any(p.name == n for p in dev_paths)}
    cut, worst = centre(dev) if dev else (0.5, float("nan"))
    print(f"cut on max J chosen on {sorted(dev)}: {cut:.3f} (worst dev margin {worst:+.3f})\n")
    print("| file | top-1 Freki | top-1 Geri rerank | top-1 judge | AUC max J | AUC gate sum | AUC sum + 0.4 J |"
          " abstention / false abstention at the cut |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in files.items():
        pos = [r for r in rows if r["answerable"]]
        neg = [r for r in rows if not r["answerable"]]

        def area(key: Any, pos: list[dict[str, Any]] = pos, neg: list[dict[str, Any]] = neg) -> str:
            return f"{auc([key(r) for r in pos], [key(r) for r in neg]):.3f}"

        a, fa = rates(rows, cut)
        print(f"| {name} | {top1(rows, 'freki'):.3f} | {top1(rows, 'geri'):.3f} | {top1(rows, 'judge'):.3f} |"
              f" {area(lambda r: r['max_j'])} | {area(lambda r: r['gate'])} |"
              f" {area(lambda r: r['gate'] + 0.4 * r['max_j'])} | {a:.3f} / {fa:.3f} |")
    print("\nPaired, answerable questions (gold first after the judge's order / after Geri's rerank):")
    for name, rows in files.items():
        ans = [r for r in rows if r["answerable"]]
        gained = sum(r["judge"] == r["gold"] != r["geri"] for r in ans)
        lost = sum(r["geri"] == r["gold"] != r["judge"] for r in ans)
        print(f"{name}: the judge right where Geri is wrong {gained}, the reverse {lost}, of {len(ans)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["score", "table"])
    parser.add_argument("records", type=Path, nargs="*", help="score: the records files, in scoring order")
    parser.add_argument("--gguf", type=Path, help="the chat model's GGUF file (default: Geri's SmolLM2)")
    parser.add_argument("--cache", type=Path, nargs="+", required=True, help="J per pair (score: the first)")
    parser.add_argument("--shard", default="0/1", help="score: i/n, this process's share of the pairs")
    parser.add_argument("--seed", type=int, help="score: shuffle the questions of all files with this seed")
    parser.add_argument("--dev", type=Path, nargs="*", default=[], help="table: files the cut is chosen on")
    parser.add_argument("--test", type=Path, nargs="*", default=[], help="table: files read at that cut")
    args = parser.parse_args()
    if args.command == "score":
        shard, shards = (int(x) for x in args.shard.split("/"))
        score(args.records, args.gguf, args.cache[0], shard, shards, args.seed)
    else:
        table(args.cache, args.dev, args.test)


if __name__ == "__main__":
    main()
