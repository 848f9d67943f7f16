"""Retrieval and knowledge-graph settings (sections of ``FrekiSettings``)."""

from __future__ import annotations

import importlib.util
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class LexicalSettings(BaseModel):
    """How the BM25 analyzer of a text is chosen (``freki.embed.language``, ``freki.embed.analyzers``)."""

    model_config = ConfigDict(extra="forbid")

    # False: every text is analyzed as its declared language or fallback_language.
    detect_language: bool = True
    # ISO 639-1 code for text whose language is neither declared nor detected with confidence.
    fallback_language: str = Field("en", pattern=r"^[a-z]{2,3}$")
    # A detection below this probability, or on fewer letters, counts as unsure (the fallback applies).
    min_probability: float = Field(0.8, ge=0.0, le=1.0)
    query_min_probability: float = Field(0.5, ge=0.0, le=1.0)  # for a query (one short text, one answer)
    min_letters: int = Field(12, ge=1, le=10_000)
    # Also index the parts of German compounds (CharSplit); needs a re-index of German documents.
    german_compounds: bool = False
    # Languages every query is also analyzed in (e.g. ["de"] for a German tenant asked in English).
    query_languages: list[str] = Field(default_factory=list, max_length=8)

    @field_validator("query_languages")
    @classmethod
    def _iso_codes(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not re.fullmatch(r"[a-z]{2,3}", v)]
        if bad:
            raise ValueError(f"query_languages takes ISO 639-1 codes such as 'de' (got {bad[:3]})")
        return value

    @model_validator(mode="after")
    def _compound_splitter_installed(self) -> LexicalSettings:
        if self.german_compounds and importlib.util.find_spec("compound_split") is None:
            raise ValueError("german_compounds is true but the compound-split package is not installed: "
                             "pip install 'wolfpack-rag[compounds]' (or set german_compounds to false)")
        return self


class ModeThresholds(BaseModel):
    """The minimum relevance a result needs when the request sets none, per search mode.

    Chosen with scripts/eval/thresholds.py on the train splits of two unrelated corpora (SciFact, SQuAD),
    each asked the other's questions: the highest threshold that keeps on-topic Recall@10 (≈ all) while
    dropping most off-topic results. Lexical (sparse) relevance cannot tell an unrelated match on common
    words from a relevant one at any threshold that keeps recall, so it gets none (docs/retrieval.md).
    """

    model_config = ConfigDict(extra="forbid")

    hybrid: float = Field(0.2, ge=0.0, le=1.0)
    dense: float = Field(0.25, ge=0.0, le=1.0)
    sparse: float = Field(0.0, ge=0.0, le=1.0)


class RetrievalSettings(BaseModel):
    """Defaults applied when a request leaves an option unset."""

    top_k: int = Field(5, ge=1, le=1000)
    max_top_k: int = Field(1000, ge=1, le=10_000)
    # One minimum relevance for every mode; None = the per-mode defaults of mode_thresholds.
    score_threshold: float | None = Field(None, ge=0.0, le=1.0)
    mode_thresholds: ModeThresholds = ModeThresholds()
    query_cache_size: int = Field(4096, ge=0)
    # Results of recent queries (freki/search/result_cache.py), dropped for a tenant on any write to it;
    # bytes of payload held, 0 = off. Off by itself with store.shared (other replicas' writes are unseen).
    result_cache_bytes: int = Field(32 * 1024 * 1024, ge=0)
    # Mode used when a request leaves SearchMode unspecified (see freki/search/retrieval.py for what each does).
    default_mode: Literal["dense", "sparse", "hybrid"] = "hybrid"
    # How hybrid mode fuses: "rrf" = Qdrant prefetch + reciprocal rank fusion in the store; "convex" =
    # confidence-weighted sum of calibrated dense and lexical relevance (freki/search/fusion.py).
    fusion: Literal["rrf", "convex"] = "convex"
    # Convex fusion: weight of lexical relevance (dense gets 1 - weight). Chosen on SciFact train and
    # checked on the pydoc sets (scripts/eval/retrieval.py).
    sparse_weight: float = Field(0.4, ge=0.0, le=1.0)
    # BM25 points per query term at which lexical relevance is 0.5 (relevance = s / (s + half * terms)).
    sparse_half_score: float = Field(8.0, gt=0.0)
    # Candidates each retriever contributes to fusion, MMR and re-ranking (at least top_k is used).
    candidates: int = Field(100, ge=1, le=10_000)
    rrf_k: int = Field(60, ge=1)
    # BM25 passage weights; changing them needs a full re-index (weights are stored with each chunk).
    bm25_k1: float = Field(1.2, ge=0.0)
    bm25_b: float = Field(0.75, ge=0.0, le=1.0)
    bm25_avgdl: float = Field(100.0, gt=0.0)
    # Lexical analysis per language (docs/retrieval.md, Languages): each chunk's terms come from the analyzer
    # of its section's language (detected unless the document's `language` metadata names it), a query's
    # from its own language's (RequestMetadata.language or detected), the fallback's and query_languages'.
    lexical: LexicalSettings = Field(default_factory=lambda: LexicalSettings())
    # Path of a sentence-transformers CrossEncoder directory; None disables re-ranking.
    reranker_model: str | None = None
    rerank_candidates: int = Field(30, ge=1, le=1000)
    # RetrievalOptions.neighbours: the most previous/next chunks a request may ask for around each hit.
    max_neighbours: int = Field(3, ge=0, le=20)
    # Concurrent query embeddings are batched while the model is busy; a leader may also wait this
    # long for company (0 = never delay a query; batches still form under load). It waits only when the
    # last pass was shared or others are queued, never for a caller that is alone; it pays with
    # max_workers >= the concurrent clients (docs/scaling.md, "Where a query's server CPU goes").
    query_batch_wait_ms: float = Field(0.0, ge=0.0, le=100.0)
    query_batch_max: int = Field(64, ge=1, le=4096)


class GraphSettings(BaseModel):
    """Knowledge graph (docs/retrieval.md "Knowledge graph"): links, graph expansion, explain, feedback."""

    max_links_per_document: int = Field(1_000, ge=0, le=100_000)  # links kept of one document (in order)
    # Graph expansion when a request leaves RetrievalOptions.graph_expand unset; the top `seeds` hits'
    # linked documents (<= max_neighbours) join as candidates and every candidate is scored as
    # semantic_weight * relevance * type weight + edge_weight * edge bonus + centrality_weight * centrality.
    expand: bool = False
    seeds: int = Field(5, ge=1, le=100)
    max_neighbours: int = Field(20, ge=1, le=1000)
    semantic_weight: float = Field(1.0, ge=0.0, le=10.0)
    edge_weight: float = Field(0.3, ge=0.0, le=10.0)
    centrality_weight: float = Field(0.05, ge=0.0, le=10.0)
    # Weight per frontmatter `type` (Mindnet's retriever_weight; 1.0 when absent) and per edge kind.
    type_weights: dict[str, float] = Field(default_factory=dict)
    kind_weights: dict[str, float] = Field(default_factory=lambda: {"references": 1.0})
    default_kind_weight: float = Field(1.0, ge=0.0, le=10.0)
    follow_seeds: bool = True  # a linked document never outranks the better hit linked with it (retrieval.md)
    # RecordFeedback: longest comment, and the size at which a tenant's log refuses more (RESOURCE_EXHAUSTED).
    feedback_comment_max_chars: int = Field(2_000, ge=0, le=100_000)
    feedback_log_max_bytes: int = Field(64 * 1024 * 1024, ge=1024)


class SearchLogSettings(BaseModel):
    """The per-tenant search log (``freki/graph/search_log.py``, docs/operations.md "Search log"); off by default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    # A tenant's file is trimmed to its newest lines (half this size) rather than grow past it.
    max_bytes: int = Field(16 * 1024 * 1024, ge=4096, le=2**40)
    max_age_days: float = Field(30.0, gt=0.0, le=3650.0)
    max_hits: int = Field(10, ge=0, le=1000)  # hits logged per search
    max_query_chars: int = Field(1000, ge=0, le=100_000)
