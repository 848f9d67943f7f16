"""Number the context's documents and their sentences so the model can cite a sentence by two small numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from wolf.v1 import common_pb2

# A sentence ends at . ! ? (optionally followed by a closing quote or bracket) before whitespace and
# an upper-case letter, digit or opening quote; or at a blank line. Common abbreviations do not end one.
# Good enough to cite by: a mis-split only makes two quotable pieces.
_ABBREVIATED = ("e.g.", "i.e.", "etc.", "vs.", "Dr.", "Mr.", "Mrs.", "St.", "No.", "Fig.", "approx.", "ca.")
_ABBREVIATIONS = "".join(rf"(?<!\b{re.escape(a)})" for a in _ABBREVIATED)
_SENTENCE_END = re.compile(
    rf"(?:(?<=[.!?])|(?<=[.!?][\"')\]])){_ABBREVIATIONS}\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")
MAX_SENTENCES = 40
MAX_SENTENCE_CHARS = 600
_HEADING_CHARS = 80


def _is_heading(part: str) -> bool:
    """A short line without sentence punctuation: a heading or label, which says nothing on its own."""
    return len(part) <= _HEADING_CHARS and not part.rstrip().endswith((".", "!", "?", ":", ";", '"', "'", ")"))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, none empty; at most MAX_SENTENCES (the tail joins the last).

    A heading joins the sentence after it ("Admin API port: The admin API listens on 9427."), so that citing
    a sentence always cites something that can state a fact.
    """
    raw = [" ".join(p.split()) for p in _SENTENCE_END.split(text) if p and p.strip()]
    parts: list[str] = []
    for part in raw:
        if parts and _is_heading(parts[-1]):
            parts[-1] = f"{parts[-1]}: {part}"
        else:
            parts.append(part)
    if len(parts) > MAX_SENTENCES:
        parts = [*parts[: MAX_SENTENCES - 1], " ".join(parts[MAX_SENTENCES - 1:])]
    return parts


@dataclass(frozen=True)
class NumberedSource:
    """A context document as the model sees it: number ``index`` (from 1) and its numbered sentences (each at
    most MAX_SENTENCE_CHARS)."""

    index: int
    document: common_pb2.RetrievedDocument
    sentences: tuple[str, ...]

    def prompt_text(self) -> str:
        """The chunk with each sentence prefixed by its number: ``(1) First. (2) Second.``"""
        return " ".join(f"({i}) {s}" for i, s in enumerate(self.sentences, 1))


def number_sources(documents: Sequence[common_pb2.RetrievedDocument]
                   ) -> tuple[list[NumberedSource], common_pb2.RAGContext]:
    """Numbered sources, and the RAG context the model is shown (same documents, content with sentence numbers).

    The prompt shows each document as ``[Document N: id]``, in this order, so N is the source number.
    """
    # A sentence is cut to what the prompt shows: a quote, a short answer and its scoring rest only on text
    # the model saw, and a chunk without sentence ends cannot make a reply (or its span search) huge.
    numbered = [NumberedSource(i, doc, tuple(s[:MAX_SENTENCE_CHARS] for s in split_sentences(doc.content))
                               or ("(empty)",))
                for i, doc in enumerate(documents, 1)]
    context = common_pb2.RAGContext()
    for item in numbered:
        shown = context.documents.add()
        shown.CopyFrom(item.document)
        shown.content = item.prompt_text()
    return numbered, context
