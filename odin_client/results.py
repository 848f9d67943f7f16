"""Plain result types the client returns, and their conversion from protobuf responses.

Callers get frozen dataclasses with ``to_dict()`` (for ``--json``) instead of protobuf messages,
so they need not know the wire contract; the RAG context proto is kept on :class:`Retrieval` only to
hand it to Geri unchanged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from wolf.v1 import common_pb2, freki_pb2

SNIPPET_CHARS = 240


@dataclass(frozen=True)
class Source:
    """One retrieved chunk an answer may be based on."""

    document_id: str
    chunk_id: str
    source: str
    score: float
    content: str
    chunk_index: int = 0
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def snippet(self) -> str:
        """The chunk text on one line, shortened for display."""
        flat = " ".join(self.content.split())
        return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (with ``snippet``, without the full content)."""
        data = asdict(self)
        data["snippet"] = self.snippet
        del data["content"]
        return data


@dataclass(frozen=True)
class Retrieval:
    """Result of RetrieveContext."""

    sources: list[Source]
    retrieval_score: float
    server_ms: int
    elapsed_ms: float
    attempts: int
    context: common_pb2.RAGContext
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "sources": [s.to_dict() for s in self.sources],
            "retrieval_score": self.retrieval_score,
            "server_ms": self.server_ms,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "attempts": self.attempts,
            "warnings": self.warnings,
        }


@dataclass(frozen=True)
class Generation:
    """Result of Generate (or the final event of GenerateStream)."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    server_ms: int
    elapsed_ms: float
    attempts: int
    thinking: str = ""
    warnings: list[str] = field(default_factory=list)
    dropped_document_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        data["elapsed_ms"] = round(self.elapsed_ms, 1)
        return data


@dataclass(frozen=True)
class Timings:
    """Wall time of each leg of ``ask`` as seen by the client, in milliseconds."""

    retrieve_ms: float
    generate_ms: float
    total_ms: float

    def to_dict(self) -> dict[str, float]:
        """JSON-ready form."""
        return {k: round(v, 1) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Answer:
    """What ``ask`` returns: the answer, what it is based on, and how long each leg took."""

    question: str
    text: str
    sources: list[Source]
    timings: Timings
    generation: Generation
    used_context: bool
    # Set when the answer was generated without retrieved context (allow_no_context fallback).
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "question": self.question,
            "answer": self.text,
            "used_context": self.used_context,
            "note": self.note,
            "sources": [s.to_dict() for s in self.sources],
            "timings_ms": self.timings.to_dict(),
            "model": self.generation.model,
            "finish_reason": self.generation.finish_reason,
            "tokens": {
                "prompt": self.generation.prompt_tokens,
                "completion": self.generation.completion_tokens,
            },
            "warnings": self.generation.warnings,
            "dropped_document_ids": self.generation.dropped_document_ids,
        }


@dataclass(frozen=True)
class IndexResult:
    """Result of indexing one document."""

    document_id: str
    source: str
    outcome: str
    chunk_count: int
    chunks_embedded: int
    server_ms: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def source_from_proto(doc: common_pb2.RetrievedDocument) -> Source:
    """Convert one retrieved chunk."""
    return Source(
        document_id=doc.document_id,
        chunk_id=doc.chunk_id,
        source=doc.source,
        score=round(float(doc.relevance_score), 4),
        content=doc.content,
        chunk_index=doc.chunk_index,
        metadata=dict(doc.metadata),
    )


def retrieval_from_proto(resp: common_pb2.WolfResponse, *, elapsed_ms: float, attempts: int) -> Retrieval:
    """Convert a RetrieveContext response."""
    ctx = resp.rag_context
    return Retrieval(
        sources=[source_from_proto(d) for d in ctx.documents],
        retrieval_score=float(ctx.retrieval_score),
        server_ms=int(resp.metadata.duration_ms),
        elapsed_ms=elapsed_ms,
        attempts=attempts,
        context=ctx,
        warnings=list(resp.metadata.warnings),
    )


def generation_from_proto(resp: common_pb2.WolfResponse, *, elapsed_ms: float, attempts: int) -> Generation:
    """Convert a Generate response (or a stream's final event)."""
    llm = resp.llm_response
    return Generation(
        text=llm.text,
        model=llm.model_used if llm.HasField("model_used") else "",
        prompt_tokens=llm.prompt_tokens,
        completion_tokens=llm.completion_tokens,
        finish_reason=llm.finish_reason,
        server_ms=int(llm.latency_ms or resp.metadata.duration_ms),
        elapsed_ms=elapsed_ms,
        attempts=attempts,
        thinking=llm.thinking,
        warnings=list(resp.metadata.warnings),
        dropped_document_ids=list(resp.metadata.dropped_document_ids),
    )


def index_result_from_proto(resp: freki_pb2.IndexDocumentResponse, source: str) -> IndexResult:
    """Convert an IndexDocument response."""
    outcome = freki_pb2.IndexOutcome.Name(resp.outcome).removeprefix("INDEX_OUTCOME_").lower()
    return IndexResult(
        document_id=resp.document_id,
        source=source,
        outcome=outcome,
        chunk_count=resp.chunk_count,
        chunks_embedded=resp.chunks_embedded,
        server_ms=int(resp.duration_ms),
    )
