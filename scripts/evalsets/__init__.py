"""Evaluation sets for Freki's retrieval: loaders that return one common shape.

* ``scifact``: BEIR SciFact from /work/shared/eval/scifact (claims vs. abstracts; train/test qrels).
* ``pydoc``: passages are docstrings of the Python standard library on this machine; two query
  sets over the same passages (see ``pydoc_set.py`` for how each was made):
  ``pydoc-lexical`` (queries reuse the passage's wording) and ``pydoc-paraphrase``
  (hand-written questions that avoid the passage's words).
"""

from __future__ import annotations

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
