"""Does the embedded model's own likelihood pick better short answers than Geri's span rules?

Offline, over the answerable squad-answers questions of one split *with their gold paragraph* (no retrieval,
no generation): the rules of geri/answering/spans.py choose the sentence and rank its candidate spans; the
model (SmolLM2 as Geri loads it, geri/backends/loaded_model.py) then scores the top-N candidates' tokens after
a prompt "context + question + Answer:" (geri/backends/scoring.py: one forward over the prompt, the
candidates batched on its KV cache), and without the question for PMI; the sentence's whole phrases
(geri/answering/phrases.py) ranked below the top N are scored too. ``collect`` writes each question's
candidates and scores to a JSONL; ``evaluate`` computes SQuAD EM/F1 of each way of choosing from it (the
likeliest candidate, mixes with the rules' score, the weighted field's consensus as Geri answers);
``diagnose`` says, without the model, where the rules lose the answer (sentence, candidates, rank);
``cost`` times the scoring call Geri makes:

    .venv/bin/python -m scripts.eval.spans diagnose --split dev
    .venv/bin/python -m scripts.eval.spans collect --split dev --out spans-dev.jsonl
    .venv/bin/python -m scripts.eval.spans evaluate spans-dev.jsonl

Decision records: docs/decisions/0390-model-scored-short-answers.md,
0415-whole-phrases-and-examples-for-short-answers.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geri.answering.phrases import whole_phrases
from geri.answering.sources import split_sentences
from geri.answering.span_scoring import EXAMPLES, candidate_pool, consensus, model_prompt
from geri.answering.spans import ranked_sentences, scored_spans
from scripts.common import p50_p90, print_latencies
from scripts.evalsets.squad_answers import f1, load, normalize, split_of

PROMPTS: dict[str, Callable[[str, str], str]] = {
    # raw text: the context, the question, "Answer:"; the candidate follows after a space
    "raw": lambda context, question: model_prompt(question, context, examples=False),
    "raw0": lambda context, question: f"{context}\nAnswer:",
    # raw after worked examples of short copied answers (geri/answering/span_scoring.py EXAMPLES)
    "shot": lambda context, question: model_prompt(question, context),
}
CHAT = "Answer with a short phrase copied from the text.\n\nText: {context}\n\nQuestion: {question}"
CHAT0 = "Copy a short phrase from the text.\n\nText: {context}"


def _chat_ids(loaded: Any, context: str, question: str) -> list[int]:
    from geri.backends.base import ChatMessage
    text = CHAT.format(context=context, question=question) if question else CHAT0.format(context=context)
    return loaded.encode_chat([ChatMessage(role="user", content=text)])


def _score(loaded: Any, prefix: list[int], spans: list[str], space: bool) -> list[list[float]]:
    from geri.backends.scoring import continuation_log_probs
    tok = loaded.tokenizer
    ids = [tok.encode((" " if space else "") + s, add_special_tokens=False) for s in spans]
    return continuation_log_probs(loaded.model, prefix, ids, pad_id=tok.eos_token_id or 0)


def collect(split: str, out: Path, top_n: int, top_sentences: int, threads: int, dtype: str, limit: int,
            prompts: list[str], with_paragraph: bool) -> None:
    """Write one record per answerable question of ``split``: its top sentences' top spans and their scores."""
    from geri.backends.embedded import default_model_path
    from geri.backends.loaded_model import load_model
    loaded = load_model(default_model_path(), threads=threads, dtype=dtype)
    corpus, questions = load()
    chosen = [q for q in questions if q["answerable"] and split_of(q["_id"]) == split][: limit or None]
    with out.open("w") as sink:
        for q in chosen:
            question, paragraph = q["question"], corpus[q["gold_doc"]]
            sentences = split_sentences(paragraph)
            ranked = ranked_sentences(question, sentences, 1)
            record: dict[str, Any] = {"id": q["_id"], "question": question, "answers": q["answers"],
                                      "sentences": [], "ms": {}}
            for rank, (number, _, sentence_score) in enumerate(ranked[:top_sentences]):
                sentence = sentences[number - 1]
                ranked_spans = scored_spans(question, sentence)
                whole = set(whole_phrases(sentence))
                cands = ranked_spans[:top_n] + [c for c in ranked_spans[top_n:] if c[0] in whole]
                spans = [s for s, _ in cands]
                item: dict[str, Any] = {"number": number, "score": sentence_score, "spans": spans,
                                        "rules": [r for _, r in cands], "phrase": [s in whole for s in spans]}
                for name, prefix, space in (
                        ("raw", loaded.tokenizer.encode(PROMPTS["raw"](sentence, question)), True),
                        ("raw0", loaded.tokenizer.encode(PROMPTS["raw0"](sentence, question)), True),
                        ("shot", loaded.tokenizer.encode(PROMPTS["shot"](sentence, question)), True),
                        ("chat", _chat_ids(loaded, sentence, question), False),
                        ("chat0", _chat_ids(loaded, sentence, ""), False)):
                    if name not in prompts:
                        continue
                    started = time.perf_counter()
                    item[name] = _score(loaded, prefix, spans, space)
                    record["ms"][f"{name}@{rank}"] = 1000 * (time.perf_counter() - started)
                record["sentences"].append(item)
            if ranked and with_paragraph:  # the paragraph as context, the top sentences' candidates, chat prompt
                spans = [s for item in record["sentences"] for s in item["spans"]]
                started = time.perf_counter()
                record["paragraph_chat"] = _score(loaded, _chat_ids(loaded, paragraph, question), spans, False)
                record["ms"]["paragraph_chat"] = 1000 * (time.perf_counter() - started)
            sink.write(json.dumps(record) + "\n")
            sink.flush()
            print(q["_id"], {k: round(v) for k, v in record["ms"].items()}, flush=True)


def _em_f1(prediction: str, answers: list[str]) -> tuple[float, float]:
    return (max(float(normalize(prediction) == normalize(a)) for a in answers),
            max(f1(prediction, a) for a in answers))


def _lm(scores: list[float], how: str) -> float:
    if not scores:
        return float("-inf")
    return sum(scores) / len(scores) if how == "mean" else sum(scores)


def choose(record: dict[str, Any], method: dict[str, Any]) -> str:
    """The span ``method`` picks from ``record`` (see :func:`methods`)."""
    sentences = record["sentences"][: method.get("sentences", 1)]
    best, best_key = "", float("-inf")
    for rank, item in enumerate(sentences):
        offset = sum(len(s["spans"]) for s in record["sentences"][:rank])
        for k, span in enumerate(item["spans"][: method.get("n", 1)]):
            key = method.get("rules", 1.0) * item["rules"][k] + method.get("sentence", 0.0) * item["score"]
            prompt = method.get("prompt")
            if prompt:
                how = method.get("how", "mean")
                lm = (_lm(record["paragraph_chat"][offset + k], how) if prompt == "paragraph_chat"
                      else _lm(item[prompt][k], how))
                if method.get("pmi"):
                    lm -= method["pmi"] * _lm(item[prompt + "0"][k], how)
                key += method.get("lm", 1.0) * lm
            if key > best_key:
                best, best_key = span, key
    return best


def choose_consensus(record: dict[str, Any], method: dict[str, Any]) -> str:
    """Geri's way (geri/answering/span_scoring.py): the consensus of the pool of the top sentence's spans —
    the rules' best ``phrases`` whole phrases, then the rules' best others, ``n`` in all — weighted by the raw
    prompt's total log-probability at ``t``."""
    if not record["sentences"]:
        return ""
    item = record["sentences"][0]
    flags = item.get("phrase", [False] * len(item["spans"]))
    first = [k for k, whole in enumerate(flags) if whole][: method["phrases"]]
    pool = (first + [k for k in range(len(item["spans"])) if k not in first])[: method["n"]]
    scores = item[method.get("prompt", "raw")]
    return consensus([item["spans"][k] for k in pool], [scores[k] for k in pool], method["t"])


def methods() -> dict[str, dict[str, Any]]:
    """The ways of choosing compared: the rules, and the model's scores of the rules' top-N spans."""
    out: dict[str, dict[str, Any]] = {"rules": {}}
    for n in (3, 5, 8, 10):
        for phrases in (0, 1, 2, 3):
            for t in (1.0, 2.0, 4.0, 8.0):
                out[f"consensus-n{n}-p{phrases}-t{t:g}"] = {"consensus": True, "n": n, "phrases": phrases, "t": t}
                out[f"shot-consensus-n{n}-p{phrases}-t{t:g}"] = {"consensus": True, "n": n, "phrases": phrases,
                                                                 "t": t, "prompt": "shot"}
    for n in (3, 5, 10, 20):
        for prompt in ("raw", "chat"):
            for how in ("mean", "sum"):
                out[f"{prompt}-{how}-n{n}"] = {"n": n, "prompt": prompt, "how": how, "rules": 0.0}
                out[f"{prompt}-{how}-pmi-n{n}"] = {"n": n, "prompt": prompt, "how": how, "rules": 0.0, "pmi": 1.0}
                for w in (0.25, 0.5, 1.0, 2.0):
                    out[f"{prompt}-{how}-n{n}+rules{w}"] = {"n": n, "prompt": prompt, "how": how, "rules": w}
                    out[f"{prompt}-{how}-pmi-n{n}+rules{w}"] = {"n": n, "prompt": prompt, "how": how,
                                                               "rules": w, "pmi": 1.0}
    for s in (2, 3):
        for n in (3, 5, 10):
            for w in (0.0, 0.5, 1.0):
                for how in ("mean", "sum"):
                    out[f"para-{how}-s{s}-n{n}+rules{w}"] = {"n": n, "sentences": s, "prompt": "paragraph_chat",
                                                            "how": how, "rules": w, "sentence": w}
                    out[f"sent-chat-{how}-s{s}-n{n}+rules{w}"] = {"n": n, "sentences": s, "prompt": "chat",
                                                                 "how": how, "rules": w, "sentence": w}
    return out


def evaluate(path: Path, only: list[str], top: int) -> None:
    """Print EM/F1 of each method (or of ``only``) over the records in ``path``, best F1 first."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    table = methods()
    rows = []
    for name, method in table.items():
        if only and name not in only:
            continue
        pick = choose_consensus if method.get("consensus") else choose
        scores = [_em_f1(pick(r, method), r["answers"]) for r in records]
        rows.append((statistics.mean(s[1] for s in scores), statistics.mean(s[0] for s in scores), name))
    rows.sort(reverse=True)
    print(f"{len(records)} questions ({path})")
    for f1_, em, name in rows[: top or None]:
        print(f"{name:36s} F1 {f1_:.3f}  EM {em:.3f}")
    costs: dict[str, list[float]] = {}
    for r in records:
        for key, ms in r["ms"].items():
            costs.setdefault(key, []).append(ms)
    print("ms per scoring call, p50 / p90:", {k: tuple(round(x) for x in p50_p90(v)) for k, v in costs.items()})


def _where_lost(question: dict[str, Any], paragraph: str) -> str:
    """Where the rules lose ``question``'s gold answer: its sentence, its candidates or their ranking."""
    answers = [normalize(a) for a in question["answers"]]
    sentences = split_sentences(paragraph)
    holding = {n for n, s in enumerate(sentences, 1) if any(a and a in normalize(s) for a in answers)}
    order = [number for number, _, _ in ranked_sentences(question["question"], sentences, 1)]
    if not holding:
        return "the gold answer is in no one sentence"
    if not order or order[0] not in holding:
        rank = min((order.index(n) + 1 for n in holding if n in order), default=0)
        return f"wrong sentence: the gold one ranks {rank if 0 < rank <= 3 else '>3'}"
    spans = [span for span, _ in scored_spans(question["question"], sentences[order[0] - 1])]
    whole = set(whole_phrases(sentences[order[0] - 1]))
    exact = [k for k, span in enumerate(spans) if normalize(span) in answers]
    if not exact:
        return "right sentence, no candidate is the gold answer"
    rank = exact[0] + 1
    where = "1" if rank == 1 else "2-5" if rank <= 5 else "6-10" if rank <= 10 else ">10"
    return f"right sentence, the gold answer ranks {where} ({'a' if spans[exact[0]] in whole else 'no'} whole phrase)"


def diagnose(split: str) -> None:
    """Print, for the answerable questions of ``split`` and their gold paragraph, where the rules lose it."""
    corpus, questions = load()
    chosen = [q for q in questions if q["answerable"] and split_of(q["_id"]) == split]
    counts = Counter(_where_lost(q, corpus[q["gold_doc"]]) for q in chosen)
    print(f"{len(chosen)} answerable {split} questions, gold paragraph given")
    for where, count in sorted(counts.items()):
        print(f"  {where:62s} {count:4d}  {count / len(chosen):.2f}")


def cost(split: str) -> None:
    """Print p50 / p90 ms of the scoring call Geri makes (its pool, through ``EmbeddedBackend`` with Geri's
    settings) with the plain prompt, the examples run in full, and the examples shared, interleaved."""
    from geri.backends.embedded import EmbeddedBackend
    from geri.settings import GeriSettings
    backend = EmbeddedBackend(GeriSettings())
    backend.prepare()
    corpus, questions = load()
    ways = {"plain": (False, ""), "examples": (True, ""), "examples shared": (True, EXAMPLES)}
    ms: dict[str, list[float]] = {way: [] for way in ways}
    for q in (q for q in questions if q["answerable"] and split_of(q["_id"]) == split):
        sentences = split_sentences(corpus[q["gold_doc"]])
        ranked = ranked_sentences(q["question"], sentences, 1)
        sentence = sentences[ranked[0][0] - 1] if ranked else ""
        pool = [f" {s}" for s in candidate_pool(sentence, [s for s, _ in scored_spans(q["question"], sentence)])]
        for way, (examples, shared) in ways.items():
            if len(pool) > 1:
                started = time.perf_counter()
                backend.score_continuations(model_prompt(q["question"], sentence, examples), pool, shared)
                ms[way].append(1000 * (time.perf_counter() - started))
    print_latencies(ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--split", choices=("dev", "test"), default="dev")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--top-n", type=int, default=20)
    c.add_argument("--top-sentences", type=int, default=3)
    c.add_argument("--threads", type=int, default=1)
    c.add_argument("--dtype", default="bfloat16")
    c.add_argument("--limit", type=int, default=0)
    c.add_argument("--prompts", nargs="+", choices=("raw", "raw0", "shot", "chat", "chat0"),
                   default=["raw", "raw0", "chat", "chat0"])
    c.add_argument("--no-paragraph", action="store_true", help="skip the whole-paragraph prompt (slow)")
    t = sub.add_parser("cost")
    t.add_argument("--split", choices=("dev", "test"), default="dev")
    d = sub.add_parser("diagnose")
    d.add_argument("--split", choices=("dev", "test"), default="dev")
    e = sub.add_parser("evaluate")
    e.add_argument("records", type=Path)
    e.add_argument("--only", nargs="*", default=[])
    e.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.split, args.out, args.top_n, args.top_sentences, args.threads, args.dtype, args.limit,
                args.prompts, not args.no_paragraph)
    elif args.command == "cost":
        cost(args.split)
    elif args.command == "diagnose":
        diagnose(args.split)
    else:
        evaluate(args.records, args.only, args.top)


if __name__ == "__main__":
    main()
