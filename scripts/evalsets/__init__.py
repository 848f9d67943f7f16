"""Evaluation sets for Freki's retrieval: loaders that return one common shape.

* ``scifact``: BEIR SciFact from ../shared/eval/scifact beside the project root (claims vs. abstracts;
  train/test qrels).
* ``pydoc``: passages are docstrings of the Python standard library on this machine; two query
  sets over the same passages (see ``pydoc_set.py`` for how each was made):
  ``pydoc-lexical`` (queries reuse the passage's wording) and ``pydoc-paraphrase``
  (hand-written questions that avoid the passage's words).
* ``manpages-de``: German man pages from Debian's ``manpages-de`` (``manpages.py``): a page's NAME description
  as the query, its BESCHREIBUNG as the passage, the other pages as distractors; train/test by page name.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class EvalSet:
    """A corpus with queries and relevance judgements per split ("train" / "test")."""

    name: str
    corpus: dict[str, str]  # document id -> text to index
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # split -> qid -> doc -> grade
    description: str = ""

    def split(self, name: str) -> dict[str, dict[str, int]]:
        """Judgements of one split, limited to queries that exist."""
        return {q: rel for q, rel in self.qrels.get(name, {}).items() if q in self.queries}

    def sampled(self, size: int, queries: Iterable[str], seed: int = 13) -> EvalSet:
        """A smaller set: every judged document of ``queries`` plus seeded random distractors up to ``size``.

        Indexing the whole SciFact corpus takes 15-50 minutes on 2 cores; a sample keeps every
        relevant document of the evaluated queries, so the figures stay comparable across code
        versions (not with full-corpus figures: fewer distractors make every ranking easier).
        """
        keep = {doc for q in queries for split in self.qrels.values() for doc in split.get(q, {}) if doc in self.corpus}
        rest = sorted(set(self.corpus) - keep)
        keep |= set(random.Random(seed).sample(rest, max(0, min(len(rest), size - len(keep)))))
        return EvalSet(f"{self.name}-sample{size}", {d: self.corpus[d] for d in sorted(keep)}, self.queries,
                       self.qrels, self.description + f" (corpus sample of {len(keep)})")
