"""The type registry (seed 004's ``types.yaml``): per document type, a chunk profile and a retriever weight.

A document's type is its ``document_type`` metadata (request metadata or frontmatter). A type's
``chunking`` replaces ``chunking.max_tokens/min_tokens/overlap_tokens`` for its documents (the boundary
signal and threshold stay the global ones); its ``retriever_weight`` multiplies the relevance of its chunks
before the threshold and top-k (1 = neutral, 0 = never found, relevance capped at 1). Reloadable: a new
weight applies to the next search; a new chunk profile to documents indexed or changed after the reload.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_TYPES = 64
_TYPE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,63}$")


class ChunkProfile(BaseModel):
    """A document type's chunk sizes, in tiktoken tokens (as ``chunking``)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(ge=16, le=100_000)
    min_tokens: int = Field(0, ge=0)
    overlap_tokens: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _sizes_consistent(self) -> ChunkProfile:
        if self.min_tokens >= self.max_tokens:
            raise ValueError(f"min_tokens ({self.min_tokens}) must be below max_tokens ({self.max_tokens})")
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must be below max_tokens ({self.max_tokens})")
        return self


class DocumentTypeSettings(BaseModel):
    """One entry of ``document_types``."""

    model_config = ConfigDict(extra="forbid")

    chunking: ChunkProfile | None = None  # None: the global chunking
    retriever_weight: float = Field(1.0, ge=0.0, le=10.0)


def check_document_types(types: dict[str, DocumentTypeSettings]) -> dict[str, DocumentTypeSettings]:
    """The registry's names and size (a clear error naming the bad ones)."""
    if len(types) > MAX_TYPES:
        raise ValueError(f"document_types has {len(types)} entries; at most {MAX_TYPES}")
    bad = [name for name in types if not _TYPE_NAME.match(name)]
    if bad:
        raise ValueError(f"document_types names are 1-64 letters, digits, '_', '.', ':', '-' (not {bad[:3]})")
    return types


def chunk_profiles_fingerprint(types: dict[str, DocumentTypeSettings]) -> str:
    """What of the registry decides chunks (part of each document's content hash: a change re-chunks)."""
    return ";".join(f"{name}={p.chunking.max_tokens}/{p.chunking.min_tokens}/{p.chunking.overlap_tokens}"
                    for name, p in sorted(types.items()) if p.chunking is not None)
