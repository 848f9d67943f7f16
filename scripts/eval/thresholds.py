"""Which default score threshold keeps unrelated results out without losing relevant ones.

Two corpora with nothing in common: SciFact (biomedical claims -> abstracts; the same 600-document sample
scripts.eval.retrieval builds) and SQuAD paragraphs (Wikipedia questions -> paragraphs). Each corpus is asked
its own questions (on-topic) and the other corpus's questions (off-topic: every result is unrelated).
Results come through RetrieveContext with threshold 0 and are thresholded here, for each mode (Freki's
defaults, retrieval.mode_thresholds, were chosen from the train figures of this script):

- off-topic results dropped: the share of off-topic top-10 results whose relevance is below t (goal >= 90 %);
- Recall@10 lost: on-topic Recall@10 at threshold t relative to t = 0 (goal <= 1 %).

Choose on the train splits (SciFact train, SQuAD "train" third); report the test splits with the choice.

    .venv/bin/python -m scripts.eval.thresholds --split train
    .venv/bin/python -m scripts.eval.thresholds --split test --quick 300
"""

from __future__ import annotations

import argparse

from scripts.eval.retrieval import ensure_indexed, sample
from scripts.evalsets import EvalSet, scifact, squad
from scripts.evalsets.harness import eval_settings, retrieve, running_freki

GRID = [0.0, 0.1, 0.15, 0.175, 0.2, 0.225, 0.25, 0.275, 0.3, 0.35, 0.4, 0.5]
MODES = ("default", "dense", "sparse")


def scored(stub, queries: dict[str, str], mode: str) -> dict[str, list[tuple[str, float]]]:  # type: ignore[no-untyped-def]
    """Top-10 documents (best chunk) with their relevance, per query."""
    out = {}
    for qid, text in queries.items():
        best: dict[str, float] = {}
        for d in retrieve(stub, text, mode, 30, score_threshold=0.0).rag_context.documents:
            best.setdefault(d.document_id, d.relevance_score)
        out[qid] = sorted(best.items(), key=lambda kv: -kv[1])[:10]
    return out


def recall(runs: dict[str, list[tuple[str, float]]], qrels: dict[str, dict[str, int]], t: float) -> float:
    total = 0.0
    for q, rel in qrels.items():
        kept = {d for d, s in runs.get(q, []) if s >= t}
        total += len(kept & set(rel)) / len(rel)
    return total / max(1, len(qrels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="train")
    parser.add_argument("--quick", type=int, default=100, help="queries per set")
    args = parser.parse_args()
    sci = scifact.load()
    sci_qrels = sample(sci.split(args.split), args.quick)
    sci = sci.sampled(600, sci_qrels)
    sq = squad.load()
    sq_qrels = sample(sq.split(args.split), args.quick)
    sets: list[tuple[EvalSet, dict[str, dict[str, int]], EvalSet, dict[str, dict[str, int]]]] = [
        (sci, sci_qrels, sq, sq_qrels), (sq, sq_qrels, sci, sci_qrels)]
    rows: dict[str, dict[float, list[float]]] = {m: {t: [] for t in GRID} for m in MODES}
    for corpus, own, other, foreign in sets:
        data_dir = ensure_indexed(corpus)
        own_q = {q: corpus.queries[q] for q in own}
        off_q = {q: other.queries[q] for q in foreign}
        with running_freki(eval_settings(data_dir)) as stub:
            for mode in MODES:
                on, off = scored(stub, own_q, mode), scored(stub, off_q, mode)
                base = recall(on, own, 0.0)
                off_scores = [s for hits in off.values() for _, s in hits]
                for t in GRID:
                    dropped = sum(s < t for s in off_scores) / max(1, len(off_scores))
                    lost = 1 - recall(on, own, t) / base if base else 0.0
                    rows[mode][t].extend([dropped, lost])
                    print(f"[{corpus.name} asked {other.name}'s questions] {mode:7s} t={t:.2f}: off-topic "
                          f"dropped {dropped:.1%}, own Recall@10 {recall(on, own, t):.4f} (lost {lost:.2%})",
                          flush=True)
    print("\n| mode | threshold | off-topic dropped (SciFact idx / SQuAD idx) | Recall@10 lost (SciFact / SQuAD) |"
          "\n| --- | --- | --- | --- |")
    for mode in MODES:
        for t in GRID:
            d1, l1, d2, l2 = rows[mode][t]
            print(f"| {mode} | {t:.2f} | {d1:.1%} / {d2:.1%} | {l1:.2%} / {l2:.2%} |")


if __name__ == "__main__":
    main()
