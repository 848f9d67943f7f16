"""BEIR SciFact: 5,183 abstracts, 809 train / 300 test claims (see PROVENANCE.md beside the data)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from scripts.common import SCIFACT_DIR
from scripts.evalsets import EvalSet

DEFAULT_DIR = SCIFACT_DIR


def load(root: Path = DEFAULT_DIR) -> EvalSet:
    """The corpus as "title\\n\\ntext" per abstract, all claims, and train/test qrels."""
    corpus: dict[str, str] = {}
    with open(root / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title, text = doc.get("title", "").strip(), doc.get("text", "").strip()
            corpus[str(doc["_id"])] = f"{title}\n\n{text}" if title else text
    queries: dict[str, str] = {}
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            queries[str(q["_id"])] = q["text"]
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split in ("train", "test"):
        judged: dict[str, dict[str, int]] = {}
        with open(root / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            next(reader)  # header: query-id corpus-id score
            for row in reader:
                if len(row) >= 3 and int(row[2]) > 0:
                    judged.setdefault(row[0].strip(), {})[row[1].strip()] = int(row[2])
        qrels[split] = judged
    return EvalSet("scifact", corpus, queries, qrels, "BEIR SciFact (claims -> abstracts)")
