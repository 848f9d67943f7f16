"""Lexical sparse vectors (BM25 term weights) for Qdrant's IDF-modified sparse index.

BM25 scores a passage d for a query q as ``sum over terms t in q of idf(t) * tf_sat(t, d)`` with

    tf_sat(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

Qdrant's ``Modifier.IDF`` multiplies each query term weight by ``idf(t)``, computed by the engine
over the whole collection and kept current as points are added or removed. So the passage side
carries ``tf_sat`` (term-frequency saturation with length normalisation) and the query side
carries 1 per distinct term: the dot product is then exactly BM25.

Tokens are lower-cased, split on non-word characters, stop words dropped and stemmed by the analyzer of
the passage's language (``freki.embed.analyzers``: Porter for English, Snowball for ~30 other languages,
character bigrams for CJK), the language chosen by ``freki.embed.language``'s rule. Identifiers such as
error codes (``E-1042``), part numbers (``XJ-9000-B``) or dotted names (``os.path.join``) are kept
whole *and* as their parts, so a query for the full code matches it exactly while a query for one part
still matches. Each token maps to a sparse index through a
CRC-32 hash: stable across processes and versions, no vocabulary to store or grow. Two tokens
colliding in 2**32 slots is rare enough to ignore for ranking.

Term statistics are per tenant: the engine's IDF counts, for each sparse index, the points that carry it in
the whole collection, so a term shared by every tenant would let tenant B's documents move tenant A's scores
(and A learn which words B indexed). Each tenant other than the default one therefore hashes its terms
together with its tenant id (``term_index(term, scope)``): a term's index is the tenant's own, and the IDF
the engine applies to it counts that tenant's chunks only. The default tenant keeps the plain hashes, so a
single-tenant index is unchanged. The collection's point count (IDF's ``N``) stays shared
(docs/decisions/0211-tenant-side-channels.md).

``avgdl`` is a fixed setting instead of a corpus statistic: passage weights are written once at
index time, and a running average would make old and new passages inconsistent. Its only effect
is how strongly long passages are penalised; the default suits Freki's chunk sizes.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from freki.embed.analyzers import ENGLISH, ENGLISH_ANALYZER, ENGLISH_STOP_WORDS, Analyzer, analyzer_for
from freki.embed.language import GUESS_MIN_PROBABILITY, LanguageConfig, LanguageDetector, normalize_language
from freki.store import SparseVector

# Bump when tokenisation, stemming or hashing changes: stored passage vectors depend on all three.
TOKENIZER_VERSION = ENGLISH_ANALYZER
STOP_WORDS = ENGLISH_STOP_WORDS


@dataclass(frozen=True)
class Bm25Params:
    """BM25 constants; ``k1`` controls term-frequency saturation, ``b`` length normalisation."""

    k1: float = 1.2
    b: float = 0.75
    avgdl: float = 100.0  # average passage length in indexed terms (after stop words)


def term_index(term: str, scope: str = "") -> int:
    """The sparse-vector index of a term: CRC-32 of its UTF-8 bytes (stable everywhere), in ``scope``'s own
    index space when ``scope`` (a tenant id) is given."""
    if scope:
        return zlib.crc32(term.encode("utf-8"), zlib.crc32(f"{scope}\x00".encode()))
    return zlib.crc32(term.encode("utf-8"))


def tokenize(text: str) -> list[str]:
    """Indexed terms of English ``text`` in order: lower-cased, stop words removed, stemmed, compounds expanded."""
    return ENGLISH.terms(text)


@dataclass(frozen=True)
class LexicalConfig:
    """Which analyzers the encoder uses (the ``lexical`` settings; docs/retrieval.md, Languages)."""

    language: LanguageConfig = LanguageConfig()
    german_compounds: bool = False
    query_languages: tuple[str, ...] = ()  # analyzers every query is also encoded with

    @property
    def fingerprint(self) -> str:
        """"" for the defaults, so the content hashes of documents indexed before this existed stay valid."""
        return "" if self == LexicalConfig() else f"/lexical={self!r}"


def lexical_config(settings: Any) -> LexicalConfig:
    """The encoder's ``LexicalConfig`` from the ``retrieval.lexical`` settings (``LexicalSettings``)."""
    return LexicalConfig(
        LanguageConfig(detect=settings.detect_language, fallback=settings.fallback_language,
                       min_letters=settings.min_letters, min_probability=settings.min_probability,
                       query_min_probability=settings.query_min_probability),
        german_compounds=settings.german_compounds,
        query_languages=tuple(normalize_language(q) for q in settings.query_languages if normalize_language(q)),
    )


@dataclass(frozen=True)
class LexicalPassage:
    """A passage's BM25 vector and the analyzer that made it (recorded with the chunk)."""

    vector: SparseVector
    language: str
    analyzer: str


class SparseEncoder:
    """Encodes passages and queries as BM25 sparse vectors (pure Python, no model, thread-safe).

    Each passage is analyzed in its language (``freki.embed.language``'s rule, ``freki.embed.analyzers``);
    a query with the analyzer of its own language, and of each of ``query_languages`` (terms merged) for
    tenants whose passages are in a language other than their questions (docs/decisions/0131-language-analyzers.md).
    """

    def __init__(self, params: Bm25Params | None = None, lexical: LexicalConfig | None = None, *,
                 shared_tenant: str = "default") -> None:
        """``shared_tenant``: the tenant whose terms keep the plain hashes (the service's default tenant)."""
        self.params = params or Bm25Params()
        self.shared_tenant = shared_tenant
        if self.params.k1 < 0 or not 0.0 <= self.params.b <= 1.0 or self.params.avgdl <= 0:
            raise ValueError(
                f"BM25 parameters out of range: k1 must be >= 0, b in [0, 1], avgdl > 0 (got {self.params})"
            )
        self.lexical = lexical or LexicalConfig()
        self.detector = LanguageDetector(self.lexical.language)

    @property
    def fingerprint(self) -> str:
        """Identifies how passage weights were computed; part of each document's content hash, so a
        change of tokenizer or BM25 parameters re-indexes documents instead of mixing weightings."""
        p = self.params
        return f"{TOKENIZER_VERSION}/k1={p.k1:g}/b={p.b:g}/avgdl={p.avgdl:g}{self.lexical.fingerprint}"

    def term_scope(self, tenant: str) -> str:
        """The index space of ``tenant``'s terms: "" (the plain hashes) for the shared tenant, else its id."""
        return "" if tenant in ("", self.shared_tenant) else tenant

    def analyzer(self, language: str) -> Analyzer:
        """The analyzer of an ISO 639-1 language ("" or unknown: no stemmer, no stop words)."""
        return analyzer_for(language, german_compounds=self.lexical.german_compounds)

    def _weights(self, terms: list[str], scope: str = "") -> SparseVector:
        counts = Counter(terms)
        if not counts:
            return SparseVector(indices=[], values=[])
        k1, b, avgdl = self.params.k1, self.params.b, self.params.avgdl
        norm = k1 * (1.0 - b + b * sum(counts.values()) / avgdl)
        return _merge(
            (term_index(term, scope), tf * (k1 + 1.0) / (tf + norm)) for term, tf in counts.items()
        )

    def encode_passage(self, text: str, language: str = "", tenant: str = "") -> SparseVector:
        """Term weights ``tf_sat`` of one passage of ``tenant`` (IDF is applied by the store), analyzed in
        ``language`` (detected when "")."""
        terms = self.analyzer(language or self.detector.choose(text)).terms(text)
        return self._weights(terms, self.term_scope(tenant))

    def encode_passages(self, texts: Sequence[str]) -> list[SparseVector]:
        """``encode_passage`` for each text, each in its detected language."""
        return [self.encode_passage(t) for t in texts]

    __call__ = encode_passages

    def encode_document(self, texts: Sequence[str], *, declared: object = "",
                        groups: Sequence[str] | None = None, tenant: str = "") -> list[LexicalPassage]:
        """The passages of one document, each analyzed in its section's language.

        ``declared``: the document's own language tag (wins over detection). ``groups``: the section of
        each text; a section's language is detected on its texts together, and where that is unsure the
        document's (detected on its first characters) is used. ``tenant``: whose document it is.
        """
        language = normalize_language(declared)
        scope = self.term_scope(tenant)
        if language or not texts:
            return [self._passage(t, language or self.lexical.language.fallback, scope) for t in texts]
        document = self.detector.choose(" ".join(texts)[:4000])
        keys = list(groups) if groups is not None and len(groups) == len(texts) else [""] * len(texts)
        by_group: dict[str, str] = {}
        for key in dict.fromkeys(keys):
            joined = " ".join(t for t, k in zip(texts, keys, strict=True) if k == key)
            by_group[key] = self.detector.detect(joined).language or document
        return [self._passage(t, by_group[k], scope) for t, k in zip(texts, keys, strict=True)]

    def _passage(self, text: str, language: str, scope: str) -> LexicalPassage:
        analyzer = self.analyzer(language)
        return LexicalPassage(self._weights(analyzer.terms(text), scope), language, analyzer.name)

    def query_languages(self, text: str, language: object = "") -> list[str]:
        """The languages whose analyzers encode a query: its own (given, detected, or the fallback when the
        detector is unsure), the detector's guess when it was unsure, then ``query_languages``; each once."""
        declared = normalize_language(language)
        detection = None if declared else self.detector.detect(text, query=True)
        own = self.detector.choose(text, declared=declared, query=True, detection=detection)
        guess = (detection.guess if detection is not None and not detection.language
                 and detection.probability >= GUESS_MIN_PROBABILITY else "")
        return list(dict.fromkeys(filter(None, [own, guess, *self.lexical.query_languages])))

    def query_terms(self, text: str, language: object = "") -> list[str]:
        """Distinct indexed terms of a query, in order (for diagnostics and adaptive fusion)."""
        own, *others = self.query_languages(text, language)
        analyzer = self.analyzer(own)
        terms = analyzer.terms(text)
        if others:
            # The query's own stop words stay out of its other analyses too ("die" is no German term).
            rest = analyzer.content_words(text)
            for lang in others:
                terms.extend(self.analyzer(lang).terms(rest))
        return list(dict.fromkeys(terms))

    def encode_query(self, text: str, language: object = "", tenant: str = "") -> SparseVector:
        """Weight 1 per distinct query term, in ``tenant``'s index space: the store's IDF turns the dot
        product into BM25 over that tenant's chunks.

        Returns an empty vector when the query has no indexable term (only stop words or
        punctuation); sparse search then finds nothing rather than something arbitrary.
        """
        scope = self.term_scope(tenant)
        return _merge((term_index(term, scope), 1.0) for term in self.query_terms(text, language))


def _merge(pairs: Iterable[tuple[int, float]]) -> SparseVector:
    # Distinct terms may hash to one index; add their weights so the vector stays valid (unique indices).
    merged: dict[int, float] = {}
    for index, weight in pairs:
        merged[index] = merged.get(index, 0.0) + weight
    ordered = sorted(merged.items())
    return SparseVector(indices=[i for i, _ in ordered], values=[float(w) for _, w in ordered])
