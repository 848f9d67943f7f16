"""Checks on a grounded answer's citations that any client's test can share (Node, grpcurl)."""

from __future__ import annotations

import re


def sentences_of(content: str) -> list[str]:
    """The document's sentences (Markdown headings left out: Geri joins a heading to the sentence after it)."""
    lines = [line for line in content.splitlines() if line.strip() and not line.startswith("#")]
    return [s for line in lines for s in re.split(r"(?<=[.!?])\s+", line.strip())]


def quotes_the_document(quote: str, content: str) -> bool:
    """Whether a citation's quote is one of the document's sentences, verbatim (after any heading)."""
    return any(quote == s or quote.endswith(f": {s}") for s in sentences_of(content))
