"""Plain result types the client returns, and their conversion from protobuf responses.

Callers get frozen dataclasses with ``to_dict()`` (for ``--json``) instead of protobuf messages,
so they need not know the wire contract; the RAG context proto is kept on :class:`Retrieval` only to
hand it to Geri unchanged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from wolf.v1 import common_pb2

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
    # Where the chunk sits in its document, for people ("p. 4", "slide 3 · Results"; "" when unknown).
    location: str = ""
    # A chunk returned as a neighbour of a hit (``retrieve(neighbours=N)``): that hit's chunk id; "" for a hit.
    neighbour_of: str = ""
    # Leading characters of ``content`` that repeat the previous chunk: ``content[overlap_chars:]`` stitches.
    overlap_chars: int = 0

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
    # The minimum relevance Freki applied, and how many of the top_k best matches it removed: no sources
    # with below_threshold > 0 means "nothing relevant enough" (say so; do not answer from weak matches).
    score_threshold: float = 0.0
    below_threshold: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "sources": [s.to_dict() for s in self.sources],
            "retrieval_score": self.retrieval_score,
            "server_ms": self.server_ms,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "attempts": self.attempts,
            "warnings": self.warnings,
            "score_threshold": self.score_threshold,
            "below_threshold": self.below_threshold,
        }

    @property
    def nothing_relevant(self) -> bool:
        """Freki had matches but none reached the relevance threshold."""
        return not self.sources and self.below_threshold > 0


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool the model asked to run: ``arguments`` parsed from its JSON (``{}`` and ``malformed`` when the
    server sent something that is not a JSON object; the tool loop then refuses the call)."""

    id: str
    name: str
    arguments: dict[str, Any]
    malformed: bool = False


def tool_call_from_proto(call: common_pb2.ToolCall) -> ToolCallRequest:
    """A ToolCall as sent by Geri, trusted no further than its type."""
    try:
        arguments = json.loads(call.arguments_json or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return ToolCallRequest(call.id, call.name, {}, malformed=True)
    return ToolCallRequest(call.id, call.name, arguments)


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
    # Structured output (generation.json_schema) and tool calls, when asked for.
    json: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    backend: str = ""
    repair_attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        data = asdict(self)
        data["elapsed_ms"] = round(self.elapsed_ms, 1)
        return data


@dataclass(frozen=True)
class Embeddings:
    """Vectors of Freki's embedding model, one per text."""

    vectors: list[list[float]]
    model: str
    dimension: int
    prompt_tokens: int


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
class Citation:
    """A sentence of a source that an answer rests on; ``marker`` is its ``[n]`` in the answer text."""

    marker: int
    document_id: str
    chunk_id: str
    chunk_index: int
    title: str
    score: float
    quote: str
    location: str = ""  # the source's location label ("p. 4"); "" when unknown

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class Answer:
    """What ``ask`` returns: the answer, what it rests on, and how long each leg took.

    A grounded answer (the default) has ``citations`` (each quoting a sentence of a source), a
    ``summary``, ``key_details`` and a ``confidence`` in [0, 1]; when the sources do not contain the
    answer, ``answered`` is False, ``text`` is empty and ``reason`` says why. ``generation`` is None when
    Odin abstained before asking Geri (nothing relevant retrieved).
    """

    question: str
    text: str
    sources: list[Source]
    timings: Timings
    generation: Generation | None
    used_context: bool
    # Set when the answer was generated without retrieved context (allow_no_context fallback).
    note: str = ""
    answered: bool = True
    reason: str = ""
    summary: str = ""
    key_details: list[str] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    confidence: float | None = None
    # True when the answer text is the cited sentences (the model's own words were not in them).
    extractive: bool = False
    # Streamed answers: the checked ``text`` differs from the provisional text deltas (show ``text``).
    revised: bool = False
    # What was searched: the question, or its standalone rewrite in a conversation, and any variants.
    query: str = ""
    query_variants: list[str] = field(default_factory=list)
    session_id: str = ""
    # Geri's report (AnswerResponse as JSON): documents (per document), retrieval, fallbacks, cache_hit.
    report: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        gen = self.generation
        return {
            "question": self.question,
            "answered": self.answered,
            "reason": self.reason,
            "answer": self.text,
            "summary": self.summary,
            "key_details": self.key_details,
            "citations": [c.to_dict() for c in self.citations],
            "confidence": self.confidence,
            "extractive": self.extractive,
            "revised": self.revised,
            "query": self.query or self.question,
            "query_variants": self.query_variants,
            "session_id": self.session_id,
            "used_context": self.used_context,
            "note": self.note,
            "sources": [s.to_dict() for s in self.sources],
            "timings_ms": self.timings.to_dict(),
            "model": gen.model if gen else "",
            "backend": gen.backend if gen else "",
            "finish_reason": gen.finish_reason if gen else "",
            "tokens": {"prompt": gen.prompt_tokens if gen else 0, "completion": gen.completion_tokens if gen else 0},
            "warnings": gen.warnings if gen else [],
            "dropped_document_ids": gen.dropped_document_ids if gen else [],
            "report": self.report,
        }


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
        location=doc.location.label,
        neighbour_of=doc.neighbour_of,
        overlap_chars=doc.overlap_chars,
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
        score_threshold=float(ctx.score_threshold),
        below_threshold=int(ctx.below_threshold),
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
        json=llm.json,
        tool_calls=[tool_call_from_proto(c) for c in llm.tool_calls],
        backend=llm.backend,
        repair_attempts=llm.repair_attempts,
    )
