"""A document's lexical (BM25) vectors, each chunk in its language, and what is recorded of them.

Each chunk's payload records the ``language`` its text was analyzed in and the ``analyzer`` (its name,
which changes whenever its terms would), so a chunk re-encoded later (a move, a re-embed, a migration) is
analyzed as it was, and a reader can tell which chunks a change of analyzer left behind. A chunk without
these fields was indexed by the English analyzer (``freki.embed.analyzers``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from freki.embed.analyzers import ENGLISH_ANALYZER
from freki.embed.sparse import LexicalPassage, SparseEncoder
from freki.store import SparseVector, StoredPoint

SparseEncode = Callable[[Sequence[str]], list[SparseVector]]


def lexical_passages(encode: SparseEncoder | SparseEncode | None, texts: Sequence[str], *,
                     declared: object = "", groups: Sequence[str] | None = None,
                     tenant: str = "") -> list[LexicalPassage | None]:
    """Vectors of ``tenant``'s document's chunk ``texts`` (``declared``: its ``language`` metadata;
    ``groups``: the section of each text); Nones when no sparse encoder is configured."""
    if encode is None:
        return [None] * len(texts)
    if isinstance(encode, SparseEncoder):
        return list(encode.encode_document(texts, declared=declared, groups=groups, tenant=tenant))
    return [LexicalPassage(v, "", "") for v in encode(texts)]


def vectors_of_points(encode: SparseEncoder | SparseEncode | None, texts: Sequence[str],
                      payloads: Sequence[Mapping[str, Any]]) -> list[SparseVector | None]:
    """Stored chunks' texts re-encoded, each in the language recorded with it (English when none is) and in
    its tenant's term space."""
    if encode is None:
        return [None] * len(texts)
    if not isinstance(encode, SparseEncoder):
        return list(encode(texts))
    return [encode.encode_passage(t, str(p.get("language") or "en"), str(p.get("tenant_id") or ""))
            for t, p in zip(texts, payloads, strict=True)]


def vector_of(passage: LexicalPassage | None) -> SparseVector | None:
    """A passage's vector (None without a sparse encoder)."""
    return passage.vector if passage is not None else None


def chunk_fields(passage: LexicalPassage | None) -> dict[str, str]:
    """The payload fields that record how a chunk was analyzed."""
    if passage is None or not passage.analyzer:
        return {}
    return {"language": passage.language, "analyzer": passage.analyzer}


def document_languages(passages: Sequence[LexicalPassage | None]) -> list[str]:
    """The languages of a document's chunks, the most frequent first."""
    counts = Counter(p.language for p in passages if p is not None and p.language)
    return [language for language, _ in counts.most_common()]


def point_language(point: StoredPoint) -> str:
    """The language a stored chunk was analyzed in ("en" for chunks indexed before it was recorded)."""
    return str(point.payload.get("language") or "en")


__all__ = ["ENGLISH_ANALYZER", "SparseEncode", "chunk_fields", "document_languages", "lexical_passages",
           "point_language", "vector_of", "vectors_of_points"]
