"""Choose the answer gate's settings from retrieval-only records of several corpus sizes.

Input: records of ``scripts/eval_answers.py --retrieval-only --min-score 0 --out FILE`` (what the gate sees
per question: best score, question-term coverage of the best passage, named terms missing), one file per
corpus size (``--grow 1``, ``--grow 6``), on the **dev** split. For every pair (``answer_min_score``,
``answer_min_coverage``) it computes abstention on unanswerable and false abstention on answerable questions
in each file, keeps the pairs whose false abstention stays within ``--budget`` in *every* file, and ranks
them by their worst abstention over the files (then by the lower score floor: the score is the part that
moves with corpus size).

    .venv/bin/python scripts/tune_answer_gate.py dev-1.jsonl dev-6.jsonl
    .venv/bin/python scripts/tune_answer_gate.py test-1.jsonl test-6.jsonl --at 0.2 0.6
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from geri.answering.evidence import Evidence, Gate  # noqa: E402


def evidence(record: dict[str, Any]) -> Evidence:
    """The gate's view of one retrieval-only record."""
    return Evidence(record["best_score"], record["margin"], record["coverage"], record["sentence_coverage"],
                    record["question_terms"], tuple(record["missing"]))


def rates(records: list[dict[str, Any]], gate: Gate) -> tuple[float, float]:
    """(abstention on unanswerable, false abstention on answerable) of ``gate``."""
    answerable = [not gate.decide(evidence(r))[0] for r in records if r["answerable"]]
    unanswerable = [not gate.decide(evidence(r))[0] for r in records if not r["answerable"]]
    return sum(unanswerable) / max(1, len(unanswerable)), sum(answerable) / max(1, len(answerable))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--budget", type=float, default=0.07, help="false abstention allowed in every file")
    parser.add_argument("--named", choices=["yes", "no", "both"], default="both",
                        help="also abstain when the best passage lacks a named term of the question")
    parser.add_argument("--at", type=float, nargs=2, metavar=("SCORE", "COVERAGE"),
                        help="only report this pair")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    files = {p.name: [json.loads(line) for line in p.read_text().splitlines()] for p in args.records}
    names = [args.named == "yes"] if args.named != "both" else [False, True]
    if args.at:
        names = [args.named == "yes"]
    rows = []
    for named in names:
        for s in ([args.at[0]] if args.at else [x / 40 for x in range(0, 21)]):
            for c in ([args.at[1]] if args.at else [x / 20 for x in range(0, 19)]):
                gate = Gate(min_score=s, min_coverage=c, named_terms=named)
                per = [rates(records, gate) for records in files.values()]
                rows.append((named, s, c, per))
    ok = [r for r in rows if args.at or all(fa <= args.budget for _, fa in r[3])]
    ok.sort(key=lambda r: (-min(a for a, _ in r[3]), r[1], -r[2]))
    print("| named | min_score | min_coverage | " + " | ".join(f"{n}: abst / false abst" for n in files) + " |")
    print("|---|---|---|" + "---|" * len(files))
    for named, s, c, per in ok[: args.top]:
        print(f"| {'yes' if named else 'no'} | {s:.3f} | {c:.2f} | "
              + " | ".join(f"{a:.3f} / {fa:.3f}" for a, fa in per) + " |")


if __name__ == "__main__":
    main()
