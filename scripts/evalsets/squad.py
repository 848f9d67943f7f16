"""SQuAD paragraphs as a short-passage retrieval set: answerable questions -> their gold paragraph.

Data: ../shared/eval/squad-answers (244 Wikipedia paragraphs, PROVENANCE.md beside it). The splits are the
ones scripts/eval/answers.py uses: a fixed third of the questions (by the hash of their id) is "train"
(scripts.eval.answers calls it "dev": for choosing settings), the rest "test".
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from scripts.common import SQUAD_ANSWERS_DIR
from scripts.evalsets import EvalSet

DEFAULT_DIR = SQUAD_ANSWERS_DIR


def split_of(question_id: str) -> str:
    return "train" if int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 3 == 0 else "test"


def load(root: Path = DEFAULT_DIR) -> EvalSet:
    """Each paragraph as "title\\n\\ntext"; qrels: each answerable question's gold paragraph."""
    corpus: dict[str, str] = {}
    for line in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        title, text = doc.get("title", "").strip(), doc.get("text", "").strip()
        corpus[str(doc["_id"])] = f"{title}\n\n{text}" if title else text
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, dict[str, int]]] = {"train": {}, "test": {}}
    for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if not q.get("answerable") or q.get("gold_doc") not in corpus:
            continue
        queries[q["_id"]] = q["question"]
        qrels[split_of(q["_id"])][q["_id"]] = {q["gold_doc"]: 1}
    return EvalSet("squad", corpus, queries, qrels, "SQuAD paragraphs (questions -> gold paragraph)")
