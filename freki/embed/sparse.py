"""Lexical sparse vectors (BM25 term weights) for Qdrant's IDF-modified sparse index.

BM25 scores a passage d for a query q as ``sum over terms t in q of idf(t) * tf_sat(t, d)`` with

    tf_sat(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

Qdrant's ``Modifier.IDF`` multiplies each query term weight by ``idf(t)``, computed by the engine
over the whole collection and kept current as points are added or removed. So the passage side
carries ``tf_sat`` (term-frequency saturation with length normalisation) and the query side
carries 1 per distinct term: the dot product is then exactly BM25.

Tokens are lower-cased, split on non-word characters, stop words dropped and Porter-stemmed.
Identifiers such as error codes (``E-1042``), part numbers (``XJ-9000-B``) or dotted names
(``os.path.join``) are kept whole *and* as their parts, so a query for the full code matches it
exactly while a query for one part still matches. Each token maps to a sparse index through a
CRC-32 hash: stable across processes and versions, no vocabulary to store or grow. Two tokens
colliding in 2**32 slots is rare enough to ignore for ranking.

``avgdl`` is a fixed setting instead of a corpus statistic: passage weights are written once at
index time, and a running average would make old and new passages inconsistent. Its only effect
is how strongly long passages are penalised; the default suits Freki's chunk sizes.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from freki.embed.stemming import stem
from freki.store import SparseVector

# Words or identifiers: runs of letters/digits, optionally joined by - _ . / (a "compound").
_TOKEN_RE = re.compile(r"\w+(?:[-_./]\w+)*", re.UNICODE)
_PART_RE = re.compile(r"[-_./]")
_MAX_TOKEN_CHARS = 64
# Bump when tokenisation, stemming or hashing changes: stored passage vectors depend on all three.
TOKENIZER_VERSION = "porter-crc32-v1"

# English stop words: Lucene's classic list plus common question words, which carry no topic
# ("what causes X?" must not favour passages that say "what" a lot).
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don isn aren wasn weren doesn didn won wouldn shouldn couldn
    """.split()
)


@dataclass(frozen=True)
class Bm25Params:
    """BM25 constants; ``k1`` controls term-frequency saturation, ``b`` length normalisation."""

    k1: float = 1.2
    b: float = 0.75
    avgdl: float = 100.0  # average passage length in indexed terms (after stop words)


def term_index(term: str) -> int:
    """The sparse-vector index of a term: CRC-32 of its UTF-8 bytes (stable everywhere)."""
    return zlib.crc32(term.encode("utf-8"))


def tokenize(text: str) -> list[str]:
    """Indexed terms of ``text`` in order: lower-cased, stop words removed, stemmed, compounds expanded."""
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(text.lower()):
        token = match.group()[:_MAX_TOKEN_CHARS].strip("_")
        if not token:
            continue
        if _PART_RE.search(token):
            # Keep the identifier whole ("e-1042", "os.path.join") and also index its parts.
            terms.append(token)
            terms.extend(_word_terms(p for p in _PART_RE.split(token) if p))
        else:
            terms.extend(_word_terms((token,)))
    return terms


def _word_terms(words: Iterable[str]) -> list[str]:
    out: list[str] = []
    for word in words:
        word = word.strip("_")
        if not word or word in STOP_WORDS:
            continue
        if len(word) == 1 and not word.isdigit():
            continue  # stray letters ("e.g." -> "e", "g") carry no meaning
        out.append(stem(word))
    return out


class SparseEncoder:
    """Encodes passages and queries as BM25 sparse vectors (pure Python, no model, thread-safe)."""

    def __init__(self, params: Bm25Params | None = None) -> None:
        self.params = params or Bm25Params()
        if self.params.k1 < 0 or not 0.0 <= self.params.b <= 1.0 or self.params.avgdl <= 0:
            raise ValueError(
                f"BM25 parameters out of range: k1 must be >= 0, b in [0, 1], avgdl > 0 (got {self.params})"
            )

    @property
    def fingerprint(self) -> str:
        """Identifies how passage weights were computed; part of each document's content hash, so a
        change of tokenizer or BM25 parameters re-indexes documents instead of mixing weightings."""
        p = self.params
        return f"{TOKENIZER_VERSION}/k1={p.k1:g}/b={p.b:g}/avgdl={p.avgdl:g}"

    def encode_passage(self, text: str) -> SparseVector:
        """Term weights ``tf_sat`` of one passage (IDF is applied by the store)."""
        counts = Counter(tokenize(text))
        if not counts:
            return SparseVector(indices=[], values=[])
        k1, b, avgdl = self.params.k1, self.params.b, self.params.avgdl
        norm = k1 * (1.0 - b + b * sum(counts.values()) / avgdl)
        return _merge(
            (term_index(term), tf * (k1 + 1.0) / (tf + norm)) for term, tf in counts.items()
        )

    def encode_passages(self, texts: Sequence[str]) -> list[SparseVector]:
        """``encode_passage`` for each text; the shape the ``Indexer`` expects."""
        return [self.encode_passage(t) for t in texts]

    __call__ = encode_passages

    def encode_query(self, text: str) -> SparseVector:
        """Weight 1 per distinct query term: the store's IDF turns the dot product into BM25.

        Returns an empty vector when the query has no indexable term (only stop words or
        punctuation); sparse search then finds nothing rather than something arbitrary.
        """
        return _merge((term_index(term), 1.0) for term in dict.fromkeys(tokenize(text)))

    def query_terms(self, text: str) -> list[str]:
        """Distinct indexed terms of a query, in order (for diagnostics and adaptive fusion)."""
        return list(dict.fromkeys(tokenize(text)))


def _merge(pairs: Iterable[tuple[int, float]]) -> SparseVector:
    # Distinct terms may hash to one index; add their weights so the vector stays valid (unique indices).
    merged: dict[int, float] = {}
    for index, weight in pairs:
        merged[index] = merged.get(index, 0.0) + weight
    ordered = sorted(merged.items())
    return SparseVector(indices=[i for i, _ in ordered], values=[float(w) for _, w in ordered])
