"""Choose the answer gate's settings from retrieval-only records of several corpus sizes.

Input: records of ``python -m scripts.eval.answers --retrieval-only --min-score 0 --out FILE`` (what the gate sees
per question: best score, weighted question-term coverage of the best passage), one file per corpus size
(``--grow 1``, ``--grow 6``), on the **dev** split. For every pair (``min_score``, ``min_evidence``) at a
``--weight`` of coverage it computes abstention on unanswerable and false abstention on answerable
questions in each file, keeps the pairs whose false abstention stays within ``--budget`` in *every* file,
and ranks them by their worst abstention over the files, then their worst false abstention, then the
lower score floor (the score is what moves with corpus size).

    .venv/bin/python -m scripts.eval.tune_answer_gate dev-1.jsonl dev-6.jsonl
    .venv/bin/python -m scripts.eval.tune_answer_gate test-1.jsonl test-6.jsonl --at 0.25 0.74
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from geri.answering.evidence import Gate
from scripts.eval.answers import report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--budget", type=float, default=0.07, help="false abstention allowed in every file")
    parser.add_argument("--weight", type=float, default=0.6, help="coverage_weight")
    parser.add_argument("--at", type=float, nargs=2, metavar=("SCORE", "EVIDENCE"), help="only this pair")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    files = {p.name: [json.loads(line) for line in p.read_text().splitlines()] for p in args.records}
    pairs = [tuple(args.at)] if args.at else [(s / 20, e / 80) for s in range(0, 9) for e in range(0, 97)]
    rows = []
    for score, evidence in pairs:
        per = [report(records, Gate(score, evidence, args.weight)) for records in files.values()]
        rows.append((score, evidence, [(m["abstention"], m["false_abstention"]) for m in per]))
    ok = [r for r in rows if args.at or all(fa <= args.budget for _, fa in r[2])]
    ok.sort(key=lambda r: (-min(a for a, _ in r[2]), max(fa for _, fa in r[2]), r[0], r[1]))
    print(f"coverage_weight {args.weight}")
    print("| min_score | min_evidence | " + " | ".join(f"{n}: abstention / false abstention" for n in files) + " |")
    print("|---|---|" + "---|" * len(files))
    for score, evidence, per in ok[: args.top]:
        print(f"| {score:.2f} | {evidence:.4f} | " + " | ".join(f"{a:.3f} / {fa:.3f}" for a, fa in per) + " |")


if __name__ == "__main__":
    main()
