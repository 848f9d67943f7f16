"""One generation from request to response: validate, fit the prompt, stream, split reasoning, account.

Both RPCs (unary ``Generate`` and ``GenerateStream``) run this same pipeline, so a streamed
answer and a unary one are built identically; the unary call simply keeps the final event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Literal

from google.protobuf import timestamp_pb2
from wolf.v1 import common_pb2

from geri.backends.base import Backend, Completion, Delta
from geri.prompting import fit_to_window
from geri.reasoning import Piece, ThinkSplitter
from geri.settings import GeriSettings
from geri.validation import validate_request

log = logging.getLogger("geri.generation")


@dataclass(frozen=True)
class StreamEvent:
    """What the pipeline emits: answer text, reasoning text, or the final response (last)."""

    kind: Literal["text", "thinking", "final"]
    text: str = ""
    response: common_pb2.WolfResponse | None = None


class GenerationPipeline:
    """Turns a ``WolfRequest`` into a stream of :class:`StreamEvent` using one backend."""

    def __init__(self, settings: GeriSettings, backend: Backend) -> None:
        self._settings = settings
        self._backend = backend

    def run(
        self, request: common_pb2.WolfRequest, cancel: threading.Event
    ) -> Generator[StreamEvent, None, None]:
        """Generate the answer to ``request``.

        Args:
            request: The client's request (validated here).
            cancel: Set when the client is gone; generation stops and the final event says
                ``finish_reason="cancelled"``.

        Raises:
            InvalidArgument: a field is wrong, or the question alone does not fit the window.
            FailedPrecondition / Unavailable / DeadlineExceeded: from the backend.
        """
        started = time.monotonic()
        req = validate_request(request, self._settings)
        model = self._backend.resolve_model(req.model)
        fitted = fit_to_window(
            system_prompt=req.system_prompt,
            question=req.prompt,
            documents=req.documents,
            language=req.language,
            window=self._backend.context_window(model),
            max_tokens=req.params.max_tokens,
            count_tokens=lambda messages: self._backend.count_tokens(messages, model),
        )

        splitter = ThinkSplitter()
        text: list[str] = []
        thinking: list[str] = []
        completion: Completion | None = None
        generation_started = time.monotonic()
        for event in self._backend.generate(fitted.messages, req.params, model, cancel):
            if isinstance(event, Completion):
                completion = event
                break
            yield from self._pieces(event, splitter, text, thinking)
        for piece in splitter.flush():
            yield from self._emit(piece, text, thinking)
        if completion is None:
            # A backend bug, not a client or dependency problem: INTERNAL, logged with the request id.
            raise RuntimeError(f"backend {self._backend.kind} ended the stream without a completion")
        latency_ms = int((time.monotonic() - generation_started) * 1000)

        # Backends that do not report prompt usage (or hit a prompt cache) fall back to Geri's own count.
        prompt_tokens = completion.prompt_tokens or fitted.prompt_tokens
        llm = common_pb2.LLMResponse(
            text="".join(text),
            thinking="".join(thinking),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion.completion_tokens,
            tokens_used=prompt_tokens + completion.completion_tokens,
            latency_ms=latency_ms,
            model_used=completion.model or model,
            finish_reason=completion.finish_reason,
        )
        timestamp = timestamp_pb2.Timestamp()
        timestamp.GetCurrentTime()
        metadata = common_pb2.ResponseMetadata(
            timestamp=timestamp,
            warnings=fitted.warnings,
            dropped_document_ids=fitted.dropped_document_ids,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        log.info(
            "request_id=%s model=%s finish=%s prompt_tokens=%d completion_tokens=%d latency_ms=%d dropped=%d",
            req.request_id,
            llm.model_used,
            llm.finish_reason,
            llm.prompt_tokens,
            llm.completion_tokens,
            latency_ms,
            len(fitted.dropped_document_ids),
        )
        response = common_pb2.WolfResponse(
            request_id=req.request_id, model_type=common_pb2.LLM, llm_response=llm, metadata=metadata
        )
        yield StreamEvent("final", response=response)

    def _pieces(
        self, delta: Delta, splitter: ThinkSplitter, text: list[str], thinking: list[str]
    ) -> Iterator[StreamEvent]:
        if delta.thinking:  # reasoning the backend already separated (Ollama's `thinking` field)
            thinking.append(delta.thinking)
            yield StreamEvent("thinking", delta.thinking)
        if delta.text:
            for piece in splitter.feed(delta.text):
                yield from self._emit(piece, text, thinking)

    @staticmethod
    def _emit(piece: Piece, text: list[str], thinking: list[str]) -> Iterator[StreamEvent]:
        (text if piece.kind == "text" else thinking).append(piece.content)
        yield StreamEvent(piece.kind, piece.content)
