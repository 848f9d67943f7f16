"""Chunking settings (a section of ``FrekiSettings``): chunk sizes and how topic shifts are found."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator


class ChunkingSettings(BaseModel):
    """Semantic chunking parameters, in tiktoken (cl100k_base) tokens."""

    max_tokens: int = Field(1000, ge=16, le=100_000)
    min_tokens: int = Field(200, ge=0)
    overlap_tokens: int = Field(100, ge=0)
    # What finds topic shifts inside a section too long for one chunk: "lexical" (TextTiling: cosine of
    # stemmed terms, no model pass) or "embedding" (cosine of sentence embeddings; the model embeds every
    # sentence of such a section once more, about double the indexing time). docs/retrieval.md compares them.
    boundary_signal: Literal["lexical", "embedding"] = "lexical"
    # A gap between sentences may become a boundary when the similarity across it (the text after it against
    # the few sentences before it) is below this; None = the signal's default (lexical 0.44, embedding 0.7:
    # the two signals' scales differ).
    similarity_threshold: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sizes_consistent(self) -> ChunkingSettings:
        if self.min_tokens >= self.max_tokens:
            raise ValueError(
                f"chunking.min_tokens ({self.min_tokens}) must be below max_tokens ({self.max_tokens})"
            )
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(
                f"chunking.overlap_tokens ({self.overlap_tokens}) must be below max_tokens ({self.max_tokens})"
            )
        return self
