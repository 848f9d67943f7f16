"""Chunk size limits: what a caller asks for (``ChunkingConfig``) and what the chunker applies after
fitting them to the embedding model's window (``EffectiveLimits``, see ``freki.ingest.chunking``)."""

from __future__ import annotations

from dataclasses import dataclass

# Part of `EffectiveLimits` so a stored chunking fingerprint changes when the boundary rules do.
ALGORITHM = "anchored-semantic-v2"

# What measures topic shift between sentences (``freki.ingest.boundaries``).
BOUNDARY_SIGNALS: tuple[str, ...] = ("lexical", "embedding")
# The similarity below which a gap may become an anchor, per signal, when the config sets none.
# The scales differ (sentences share few exact terms): 0.44 marks the same share of gaps eligible as the
# embedding default 0.7 (docs/retrieval.md, "Chunking boundaries").
DEFAULT_THRESHOLDS: dict[str, float] = {"embedding": 0.7, "lexical": 0.44}


@dataclass(frozen=True)
class ChunkingConfig:
    """Requested chunk sizes in tiktoken tokens, the topic-shift signal and the similarity needed to keep
    sentences together (None: the signal's default)."""

    max_tokens: int = 1000
    min_tokens: int = 200
    overlap_tokens: int = 100
    similarity_threshold: float | None = None
    boundary_signal: str = "lexical"

    @property
    def threshold(self) -> float:
        """The similarity threshold in force: the configured one, else the signal's default."""
        if self.similarity_threshold is not None:
            return self.similarity_threshold
        return DEFAULT_THRESHOLDS[self.boundary_signal]

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive (got {self.max_tokens})")
        if not 0 <= self.min_tokens < self.max_tokens:
            raise ValueError(
                f"min_tokens must be >= 0 and less than max_tokens (got min_tokens={self.min_tokens}, "
                f"max_tokens={self.max_tokens})"
            )
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise ValueError(
                f"overlap_tokens must be >= 0 and less than max_tokens (got overlap_tokens="
                f"{self.overlap_tokens}, max_tokens={self.max_tokens})"
            )
        if self.similarity_threshold is not None and not 0.0 <= self.similarity_threshold <= 1.0:
            raise ValueError(f"similarity_threshold must be in [0, 1] (got {self.similarity_threshold})")
        if self.boundary_signal not in BOUNDARY_SIGNALS:
            raise ValueError(f"boundary_signal must be one of {', '.join(BOUNDARY_SIGNALS)} "
                             f"(got {self.boundary_signal!r})")


@dataclass(frozen=True)
class EffectiveLimits:
    """The limits the chunker actually applies after fitting the config to the model window."""

    max_tokens: int
    min_tokens: int
    overlap_tokens: int
    window_limit: int
    similarity_threshold: float
    core_max_tokens: int  # new text per chunk, leaving room for the overlap
    core_max_window: int  # word-pieces of new text per chunk, excluding special tokens
    boundary_signal: str = "lexical"
    algorithm: str = ALGORITHM

    def describe(self) -> str:
        """One line for the service's startup log."""
        return (
            f"chunks: max {self.max_tokens} tokens and {self.window_limit} model word-pieces, min "
            f"{self.min_tokens}, overlap {self.overlap_tokens}, {self.boundary_signal} boundaries below "
            f"similarity {self.similarity_threshold}"
        )
