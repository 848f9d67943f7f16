"""Study answer-gate rules offline, on retrieval-only records that hold each question's passages.

Input: records of ``python -m scripts.eval.answers --retrieval-only --min-score 0 --passages 40 --out FILE``
(the question, Freki's top 40 passages with document ids and scores), one file per corpus size and split.

**Augmented unanswerable questions.** An answerable question asked of the corpus *without its gold article*
is an unanswerable question of exactly the kind the benchmark's unanswerable set holds (questions about
articles that are not indexed). Freki's hybrid relevance is absolute per passage (cosine and saturated BM25,
freki/search/fusion.py), so dropping the gold article's passages from the deep list and keeping the next
five is what the gate would see had the article not been indexed (up to the article's share of BM25's
document frequencies). ``--augment`` adds these as unanswerable records ("aug" rows); built from dev only, they
calibrate rules without touching test.

**Geri's source rerank.** ``rerank`` writes, beside each records file, the order Geri's source rerank
(the embedded model's question likelihood) gives each view's top five; the ``reranked`` rule judges the
source it puts first (the gate after the rerank instead of before).

**Rules.** Each rule maps a question's view (its top five passages) to "answer or abstain"; ``search``
chooses a rule's threshold on dev files (real and augmented, every size given): with ``--centre`` the one
farthest inside the issue's goals (abstention >= 0.9, false abstention <= 0.1) in every file, else the highest
worst-case abstention whose false abstention stays within ``--budget`` in every file (0191's way). ``table``
prints every rule at its chosen threshold over any files (test once, after choosing). Decision 0410.

    .venv/bin/python -m scripts.eval.gate_study rerank ret-dev-w1.jsonl ret-dev-w6.jsonl   # optional, ~1 min each
    .venv/bin/python -m scripts.eval.gate_study search ret-dev-w1.jsonl ret-dev-w6.jsonl --augment --centre \
        --chosen chosen.json
    .venv/bin/python -m scripts.eval.gate_study table --chosen chosen.json ret-test-w1.jsonl ret-test-w6.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geri.answering.evidence import Passage, assess, question_terms, sentences, terms
from geri.answering.spans import _fits, expected_kind, ranked_sentences

TOP = 5
SHOWN = 4  # answering.max_sources: the sources Geri numbers, and reranks
NEAR = 0.07  # sources within this of the best are those Geri's source rerank may move first (rerank_margin)


@dataclass(frozen=True)
class View:
    """What a gate sees of one question, and whether a source answers it."""

    file: str
    kind: str  # "real" or "aug"
    answerable: bool
    features: dict[str, float]


def article(doc_id: str) -> str:
    """The SQuAD article a paragraph id ("41_8") belongs to; distractor ids are their own article."""
    return doc_id.split("_")[0] if "_" in doc_id else doc_id


def features(question: str, top: list[tuple[str, float, str]]) -> dict[str, float]:
    """Per-question inputs a rule may use, from the top passages (best first)."""
    found = [Passage(text, score) for _, score, text in top[:TOP]]
    ev = assess(question, found)
    out = {"score": ev.score, "margin": ev.margin, "coverage": ev.coverage, "sentence_coverage": ev.sentence_coverage,
           "terms": float(ev.question_terms)}
    if not found:
        return {**out, "near_coverage": 0.0, "near_score": 0.0, "fit": 0.0, "rule": -20.0, "spread": 0.0,
                "top2_sentence": 0.0}
    wanted = question_terms(question)
    total = sum(wanted.values()) or 1.0

    def cov(text: str) -> float:
        got = terms(text)
        return sum(w for t, w in wanted.items() if t in got) / total

    near = [p for p in found if p.score >= ev.score - NEAR]
    best_near = max(near, key=lambda p: (cov(p.content), p.score))
    out["near_coverage"] = cov(best_near.content)
    out["near_score"] = best_near.score
    out["top2_sentence"] = max((cov(s) for p in found[:2] for s in sentences(p.content)), default=0.0)
    ranked = ranked_sentences(question, sentences(found[0].content), 1)
    kind = expected_kind(question)
    out["rule"] = ranked[0][2] if ranked else -20.0
    out["fit"] = 1.0 if not kind else float(any(_fits_kind(kind, span) for _, span, _ in ranked[:1]))
    scores = [p.score for p in found]
    out["spread"] = scores[0] - sum(scores) / len(scores)
    return out


def _fits_kind(kind: str, span: str) -> bool:
    return _fits(kind, span) >= 0.5


def views(path: Path, augment: bool) -> list[View]:
    """The real view of every record in ``path``, and with ``augment`` the gold-article-less view of every
    answerable one. When ``path`` has a ``.rerank.json`` beside it (view -> Geri's source-rerank order of its
    top five), each view's features also hold those of the reranked order, prefixed ``rr_``."""
    beside = path.with_suffix(".rerank.json")
    orders: dict[str, list[int]] = json.loads(beside.read_text()) if beside.exists() else {}
    out: list[View] = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        for kind, (found, answerable) in tops(r, augment).items():
            f = features(r["question"], found)
            order = orders.get(f"{r['id']}|{kind}")
            if order is not None:  # Geri reranks only the sources it shows (max_sources); the rest follow
                order = [i for i in order if i < SHOWN] + [i for i in order if i >= SHOWN]
                f.update({f"rr_{k}": v for k, v in features(r["question"], [found[i] for i in order]).items()})
            out.append(View(path.stem, kind, answerable, f))
    return out


Found = list[tuple[str, float, str]]


def tops(record: dict[str, Any], augment: bool) -> dict[str, tuple[Found, bool]]:
    """View kind -> (its top passages, answerable?): "real", and with ``augment`` for an answerable record
    "aug", the passages without its gold article."""
    top: Found = [(str(i), float(s), str(t)) for i, s, t in record["passages"]]
    out = {"real": (top[:TOP], bool(record["answerable"]))}
    if augment and record["answerable"]:
        gold = article(record["gold"])
        out["aug"] = ([p for p in top if article(p[0]) != gold][:TOP], False)
    return out


def rerank(path: Path) -> None:
    """Write Geri's source-rerank order (answering.source_reranker, the embedded model) of every view's top
    passages beside ``path`` (``.rerank.json``), for the ``reranked`` rule."""
    from wolf.v1 import common_pb2

    from geri.answering.source_rerank import rerank_sources
    from geri.backends.embedded import EmbeddedBackend
    from geri.settings import GeriSettings

    settings = GeriSettings(backend="embedded", embedded_threads=1)
    backend = EmbeddedBackend(settings)
    backend.prepare()
    orders = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        for kind, (found, _) in tops(r, True).items():
            docs = [common_pb2.RetrievedDocument(document_id=str(i), content=text, relevance_score=score)
                    for i, (_, score, text) in enumerate(found)]
            ranked = rerank_sources(r["question"], docs, backend, settings.answering.rerank_margin)
            orders[f"{r['id']}|{kind}"] = [int(d.document_id) for d in ranked]
    path.with_suffix(".rerank.json").write_text(json.dumps(orders))


Rule = Callable[[dict[str, float], float], bool]  # (features, threshold) -> answer?

RULES: dict[str, Rule] = {
    # 0191, Geri today: score >= 0.25 and score + 0.6 coverage >= t
    "today": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.6 * f["coverage"] >= t,
    "sentence": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.6 * f["sentence_coverage"] >= t,
    "both": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.3 * (f["coverage"] + f["sentence_coverage"]) >= t,
    "today+sentence": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.6 * f["coverage"]
    + 0.3 * f["sentence_coverage"] >= t,
    # the gate after Geri's source rerank (answering.source_reranker): coverage of the source it puts first
    "reranked": lambda f, t: f["score"] >= 0.25 and f.get("rr_score", 0.0) + 0.6 * f.get("rr_coverage", 0.0) >= t,
    "near": lambda f, t: f["score"] >= 0.25 and f["near_score"] + 0.6 * f["near_coverage"] >= t,
    "top2_sentence": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.6 * f["top2_sentence"] >= t,
    "today+fit": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.6 * f["coverage"] + 0.05 * f["fit"] >= t,
    "today+rule": lambda f, t: f["score"] >= 0.25 and f["score"] + 0.6 * f["coverage"] + 0.01 * f["rule"] >= t,
    "coverage_only": lambda f, t: f["score"] >= 0.25 and f["coverage"] >= t,
}


THRESHOLDS = [x / 400 for x in range(0, 601)]


def rates(rows: list[View], rule: Rule, t: float) -> tuple[float, float]:
    """(abstention on unanswerable, false abstention on answerable) of ``rule`` at ``t``."""
    unans = [v for v in rows if not v.answerable]
    ans = [v for v in rows if v.answerable]
    return (sum(not rule(v.features, t) for v in unans) / max(1, len(unans)),
            sum(not rule(v.features, t) for v in ans) / max(1, len(ans)))


def groups(all_views: list[View]) -> dict[str, tuple[list[View], list[View]]]:
    """Per file: (real questions, augmented unanswerable with the file's answerable ones)."""
    out: dict[str, tuple[list[View], list[View]]] = {}
    for name in dict.fromkeys(v.file for v in all_views):
        mine = [v for v in all_views if v.file == name]
        out[name] = ([v for v in mine if v.kind == "real"],
                     [v for v in mine if v.kind == "aug" or v.answerable])
    return out


def choose(all_views: list[View], rule: Rule, budget: float, use_aug: bool) -> tuple[float, list[float]]:
    """The threshold with the highest worst-case abstention (real, and augmented when ``use_aug``) whose false
    abstention stays within ``budget`` in every file; then the lowest worst false abstention."""
    best: tuple[float, float, float] | None = None
    for t in THRESHOLDS:
        abst, fals = [], []
        for real, aug in groups(all_views).values():
            a, fa = rates(real, rule, t)
            abst.append(a)
            fals.append(fa)
            if use_aug and any(v.kind == "aug" for v in aug):
                abst.append(rates(aug, rule, t)[0])
        if max(fals) > budget:
            continue
        key = (min(abst), -max(fals), -t)
        if best is None or key > best:
            best = key
    return (-best[2], [best[0], -best[1]]) if best else (0.0, [0.0, 0.0])


def centre(all_views: list[View], rule: Rule, goal: tuple[float, float]) -> tuple[float, list[float]]:
    """The threshold farthest inside the goals (abstention >= goal[0] on every file's unanswerable questions,
    real and augmented pooled; false abstention <= goal[1] on its answerable ones): the largest worst margin,
    the middle of the plateau on a tie. Not the edge of the band, where a handful of dev questions decide."""
    margins = []
    for t in THRESHOLDS:
        worst = 1.0
        for real, aug in groups(all_views).values():
            unanswerable = [v for v in real + aug if not v.answerable]
            worst = min(worst, rates(unanswerable, rule, t)[0] - goal[0], goal[1] - rates(real, rule, t)[1])
        margins.append(worst)
    top = max(margins)
    tied = [t for t, m in zip(THRESHOLDS, margins, strict=True) if m >= top - 1e-9]
    return tied[len(tied) // 2], [top, tied[0], tied[-1]]


def table(all_views: list[View], chosen: dict[str, float]) -> None:
    """Every rule at its threshold: abstention / false abstention per file (real), and augmented abstention."""
    files = groups(all_views)
    print("| rule | t | " + " | ".join(f"{n} real | {n} aug" for n in files) + " |")
    print("|---|---|" + "---|---|" * len(files))
    for name, t in chosen.items():
        rule = RULES[name.split(" ")[0]]  # "today (0191)": a rule with a label
        cells = []
        for real, aug in files.values():
            a, fa = rates(real, rule, t)
            has_aug = any(v.kind == "aug" for v in aug)
            cells.append(f"{a:.3f} / {fa:.3f} | " + (f"{rates(aug, rule, t)[0]:.3f}" if has_aug else "–"))
        print(f"| {name} | {t:.4f} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["search", "table", "rerank"])
    parser.add_argument("records", type=Path, nargs="+")
    parser.add_argument("--augment", action="store_true", help="add gold-article-less views (dev only)")
    parser.add_argument("--budget", type=float, default=0.07)
    parser.add_argument("--centre", action="store_true",
                        help="search: the threshold farthest inside the goals (0.9 / 0.1), not the budget's edge")
    parser.add_argument("--real-only", action="store_true", help="search: choose on real questions only")
    parser.add_argument("--chosen", type=Path, help="table: JSON {rule: threshold}; search: write it here")
    args = parser.parse_args()
    if args.command == "rerank":
        for path in args.records:
            rerank(path)
        return
    started = time.perf_counter()
    all_views = [v for p in args.records for v in views(p, args.augment)]
    per_view_ms = 1000 * (time.perf_counter() - started) / max(1, len(all_views))
    print(f"{len(all_views)} views, features {per_view_ms:.1f} ms per view")
    if args.command == "search":
        chosen = {}
        for name, rule in RULES.items():
            if args.centre:
                t, (margin, low, high) = centre(all_views, rule, (0.9, 0.1))
                print(f"{name}: t {t:.4f} worst margin {margin:+.3f} on [{low:.4f}, {high:.4f}]")
            else:
                t, (worst, false) = choose(all_views, rule, args.budget, not args.real_only)
                print(f"{name}: t {t:.4f} worst abstention {worst:.3f} worst false abstention {false:.3f}")
            chosen[name] = t
        if args.chosen:
            args.chosen.write_text(json.dumps(chosen, indent=1))
        table(all_views, chosen)
    else:
        table(all_views, json.loads(args.chosen.read_text()) if args.chosen else {"today": 0.74})


if __name__ == "__main__":
    main()
