"""Should the model's own cited sentence count when Geri picks the short answer's sentence?

Offline, over the records of an end-to-end run of scripts/eval/answers.py (embedded backend), which carry per
answered question the model's raw citations and answer text, the sentences of its cited source as the model
saw them numbered, and the sentence Geri's answer quotes. Per question the span rules rank the cited source's
sentences (geri/answering/spans.py ``ranked_sentences``, the model's sentence first on a tie, as Geri ranks
them); the question's likelihood after each of the rules' top 2 and the cited sentence
(geri/answering/sentence_choice.py) and the span Geri's chooser picks in each (geri/answering/span_scoring.py
``model_span``) are computed once with ``EmbeddedBackend`` and kept in ``--cache``. Ways of choosing the
sentence are then compared by sentence accuracy (the chosen sentence holds a gold answer, SQuAD normalisation)
and SQuAD EM/F1 of the chooser's span in it, paired against today's choice (the rules' top 2 by rules score
+ 8 × the question's mean log-probability), bootstrap over questions:

    .venv/bin/python -m scripts.eval.answers --split dev --out e2e-dev.jsonl
    .venv/bin/python -m scripts.eval.cited_sentence e2e-dev.jsonl --cache cited-dev.json

"Supported": the model's answer text is carried by its cited sentence (geri/answering/grounding.py
``support`` ≥ ``answering.min_support``). Decision record: docs/decisions/0445-the-models-cited-sentence.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from geri.answering.grounding import content_words, support
from geri.answering.sentence_choice import WEIGHT, sentence_prompt
from geri.answering.source_rerank import asked_text, question_likelihoods
from geri.answering.span_scoring import model_span
from geri.answering.spans import candidate_spans, ranked_sentences, scored_spans
from geri.settings import GeriSettings
from scripts.evalsets.replica import paired_bootstrap
from scripts.evalsets.squad_answers import f1, normalize

MIN_SUPPORT = GeriSettings().answering.min_support


def _holds(sentence: str, answers: list[str]) -> bool:
    text = normalize(sentence)
    return any(normalize(a) and normalize(a) in text for a in answers)


def cases(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answered answerable questions whose model citation names a sentence of the source Geri cites."""
    out = []
    for r in records:
        sentences = r.get("cited_sentences") or []
        if not r.get("answerable") or not r.get("answered") or not sentences:
            continue
        cited = next((int(c.get("sentence", 0)) for c in r.get("raw_citations") or []
                      if 1 <= int(c.get("sentence", 0)) <= len(sentences)), 0)
        ranked = ranked_sentences(r["question"], sentences, cited)
        if not cited or not ranked:
            continue
        out.append({"id": r["id"], "question": r["question"], "answers": r["answers"], "sentences": sentences,
                    "cited": cited, "model_answer": r.get("model_answer", ""), "final": r["final_sentence"],
                    "em": r["em"], "f1": r["f1"], "ranked": [(n, score) for n, _, score in ranked]})
    return out


def fill_cache(items: list[dict[str, Any]], cache_path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The question's mean log-probability after, and the chooser's span in, each of the rules' top 2 and the
    cited sentence of every item; computed once per (question, sentence) with the embedded model."""
    cache: dict[str, dict[str, dict[str, Any]]] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    backend = None
    for item in items:
        got = cache.setdefault(item["id"], {})
        spanned = {n for n, _ in item["ranked"]}
        for n in {*[n for n, _ in item["ranked"][:2]], item["cited"]} & spanned:
            if str(n) in got:
                continue
            if backend is None:
                from geri.backends.embedded import EmbeddedBackend

                backend = EmbeddedBackend(GeriSettings())
                backend.prepare()
            sentence = item["sentences"][n - 1]
            ll = question_likelihoods([sentence_prompt(sentence)], asked_text(item["question"]), backend)[0]
            spans = [s for s, _ in scored_spans(item["question"], sentence)]
            got[str(n)] = {"ll": ll, "span": model_span(item["question"], sentence, backend, ranked_spans=spans)}
        cache_path.write_text(json.dumps(cache))
    return cache


Rule = Callable[[dict[str, Any], dict[str, dict[str, Any]]], int]


def _choose(ranked: list[tuple[int, float]], got: dict[str, dict[str, Any]], extra: int = 0,
            bonus: float = 0.0) -> int:
    """Geri's sentence chooser over the rules' top 2 (and ``extra``, a third candidate, when given), ``bonus``
    added to ``extra``'s total."""
    top = ranked[:2] + [(n, s) for n, s in ranked[2:] if n == extra]
    if len(top) < 2:
        return top[0][0]
    return max(top, key=lambda ns: (ns[1] + WEIGHT * got[str(ns[0])]["ll"] + bonus * (ns[0] == extra),
                                    -top.index(ns)))[0]


def supported(item: dict[str, Any]) -> bool:
    """The model's answer words are carried by its cited sentence."""
    return bool(item["model_answer"].strip()) and \
        support(item["model_answer"], [item["sentences"][item["cited"] - 1]]) >= MIN_SUPPORT


def supported_beyond(item: dict[str, Any]) -> bool:
    """The model's answer words that are not the question's are carried by its cited sentence (at least one)."""
    new = content_words(item["model_answer"]) - content_words(item["question"])
    return bool(new) and support(" ".join(sorted(new)), [item["sentences"][item["cited"] - 1]]) >= MIN_SUPPORT


def holds_span(item: dict[str, Any]) -> bool:
    """The model's answer text contains a span candidate of its cited sentence."""
    said = f" {normalize(item['model_answer'])} "
    return any(f" {normalize(s)} " in said for s in candidate_spans(item["sentences"][item["cited"] - 1],
                                                                  item["question"]) if normalize(s))


def _spanned(item: dict[str, Any]) -> bool:
    return any(n == item["cited"] for n, _ in item["ranked"])


def _bonus(weight: float, when: Callable[[dict[str, Any]], bool] = lambda item: True) -> Rule:
    """The rules' scores with ``weight`` added to the cited sentence's (when ``when``), then Geri's chooser."""
    def rule(item: dict[str, Any], got: dict[str, dict[str, Any]]) -> int:
        if not when(item):
            return _choose(item["ranked"], got)
        ranked = sorted(((n, s + weight * (n == item["cited"])) for n, s in item["ranked"]),
                        key=lambda ns: (-ns[1], ns[0] != item["cited"], ns[0]))
        return _choose(ranked, got)  # its top 2 are among the rules' top 2 and the cited sentence: all scored
    return rule


def _chooser_bonus(weight: float, when: Callable[[dict[str, Any]], bool] = lambda item: True) -> Rule:
    """Geri's chooser over the rules' top 2 and the cited sentence, ``weight`` added to the cited sentence's
    total (rules score + 8 × likelihood) when ``when``."""
    def rule(item: dict[str, Any], got: dict[str, dict[str, Any]]) -> int:
        return _choose(item["ranked"], got, item["cited"], weight) if when(item) else _choose(item["ranked"], got)
    return rule


def rules() -> dict[str, Rule]:
    """The ways of choosing the sentence compared."""
    out: dict[str, Rule] = {
        "today (rules top 2 + 8 × likelihood)": lambda item, got: _choose(item["ranked"], got),
        "the rules' first alone": lambda item, got: item["ranked"][0][0],
        "the model's cited sentence": lambda item, got: item["cited"] if _spanned(item) else _choose(
            item["ranked"], got),
        "cited if supported, else today": lambda item, got: item["cited"] if _spanned(item) and supported(item)
        else _choose(item["ranked"], got),
        "cited if supported beyond the question, else today": lambda item, got: item["cited"]
        if _spanned(item) and supported_beyond(item) else _choose(item["ranked"], got),
        "cited if the answer holds its span, else today": lambda item, got: item["cited"]
        if _spanned(item) and holds_span(item) else _choose(item["ranked"], got),
        "cited as a third candidate of the chooser": lambda item, got: _choose(item["ranked"], got, item["cited"]),
    }
    for weight in (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0):
        out[f"bonus {weight:g} on the cited sentence"] = _bonus(weight)
        out[f"bonus {weight:g} on the cited sentence if supported"] = _bonus(weight, supported)
    for weight in (2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0):
        out[f"chooser bonus {weight:g} on the cited sentence"] = _chooser_bonus(weight)
        out[f"chooser bonus {weight:g} on the cited sentence if supported"] = _chooser_bonus(weight, supported)
        out[f"chooser bonus {weight:g} if supported beyond the question"] = _chooser_bonus(weight, supported_beyond)
    return out


def evaluate(records: list[dict[str, Any]], cache_path: Path, only: list[str]) -> None:
    """Print the comparison table (Markdown) over ``records``."""
    items = cases(records)
    cache = fill_cache(items, cache_path)
    holds = {i["id"]: {n: _holds(s, i["answers"]) for n, s in enumerate(i["sentences"], 1)} for i in items}
    sup = [i for i in items if supported(i)]
    today_sup = statistics.mean(holds[i["id"]][_choose(i["ranked"], cache[i["id"]])] for i in sup) if sup else 0.0
    print(f"{len(items)} answered questions with a model citation; the cited sentence holds a gold answer: "
          f"{statistics.mean(holds[i['id']][i['cited']] for i in items):.3f}; supported: {len(sup)}, of which the "
          f"cited sentence holds one: {statistics.mean(holds[i['id']][i['cited']] for i in sup) if sup else 0:.3f}, "
          f"today's sentence: {today_sup:.3f}")
    print(f"recorded (Geri's own answers): EM {statistics.mean(i['em'] for i in items):.3f}, "
          f"F1 {statistics.mean(i['f1'] for i in items):.3f}")
    table = rules()
    base_name = next(iter(table))
    per: dict[str, dict[str, tuple[float, float, float, int]]] = {}
    for name, rule in table.items():
        if only and name not in only and name != base_name:
            continue
        per[name] = {}
        for i in items:
            got = cache[i["id"]]
            n = rule(i, got)
            span = got[str(n)]["span"]
            em = max(float(normalize(span) == normalize(a)) for a in i["answers"])
            per[name][i["id"]] = (float(holds[i["id"]][n]), em, max(f1(span, a) for a in i["answers"]), n)
    base = per[base_name]
    print("| sentence chosen by | sentence accuracy | EM | F1 | F1 − today [95 % CI] | better / worse | moved |\n"
          "|---|---|---|---|---|---|---|")
    for name, scores in per.items():
        acc, em, f1_ = (statistics.mean(v[k] for v in scores.values()) for k in range(3))
        diff, low, high = paired_bootstrap({q: v[2] for q, v in base.items()}, {q: v[2] for q, v in scores.items()},
                                           resamples=5000)
        better = sum(scores[q][2] > base[q][2] for q in scores)
        worse = sum(scores[q][2] < base[q][2] for q in scores)
        moved = sum(scores[q][3] != base[q][3] for q in scores)
        print(f"| {name} | {acc:.3f} | {em:.3f} | {f1_:.3f} | {diff:+.3f} [{low:+.3f}, {high:+.3f}] | "
              f"{better} / {worse} | {moved} |")
    replayed = sum(base[i["id"]][3] == i["final"] for i in items)
    print(f"today's replay chose Geri's own sentence for {replayed} of {len(items)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", type=Path, help="records of scripts/eval/answers.py --out")
    parser.add_argument("--cache", type=Path, required=True, help="the model's scores and spans (JSON; reused)")
    parser.add_argument("--only", action="append", default=[], help="compare only this rule (and today's)")
    args = parser.parse_args()
    records = [json.loads(line) for line in args.records.read_text(encoding="utf-8").splitlines() if line.strip()]
    print(f"load {os.getloadavg()[0]:.2f}")
    evaluate(records, args.cache, args.only)


if __name__ == "__main__":
    main()
