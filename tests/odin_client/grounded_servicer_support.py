"""A scripted Geri that serves the grounded-answer contract (Answer, AnswerStream, RewriteQuery) for Odin's
unit tests at the servicer seam: it records what Odin sends and answers from canned data. The real Geri
behind these RPCs is tested in tests/geri and end to end in tests/odin_client/test_end_to_end.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
from wolf.v1 import common_pb2, geri_pb2

from tests.odin_client.servicers_support import ControlledGeri

REWRITTEN = "Which port does the Skadi gateway listen on?"


class GroundedGeri(ControlledGeri):
    """ControlledGeri plus the grounded RPCs.

    Answer cites the first context document's content (``answered`` False, without a generation, when the
    context is empty); ``answer_deltas`` are AnswerStream's text deltas, ``revised_text`` (when set) the
    checked text that replaces them; ``stream_break_after`` > 0 ends the stream after that many deltas
    without its final event. RewriteQuery rewrites a question that has a conversation ("known" session or
    messages) to :data:`REWRITTEN` and adds paraphrases; ``fail_rewrite`` makes it fail.
    """

    def __init__(self) -> None:
        super().__init__()
        self.answer_deltas = ["The gateway listens ", "on port 7443 [1]."]
        self.revised_text = ""
        self.stream_break_after = 0
        self.fail_rewrite = False
        self.variants = ["gateway port number", "port of the gateway"]
        self.stream_done = threading.Event()

    def _grounded(self, request: geri_pb2.AnswerRequest) -> geri_pb2.AnswerResponse:
        docs = request.request.context.documents
        if not docs:
            return geri_pb2.AnswerResponse(request_id=request.request.request_id, answer=geri_pb2.GroundedAnswer(
                answered=False, reason="found nothing relevant: 3 match(es) scored below Freki's threshold 0.30"))
        doc = docs[0]
        cite = geri_pb2.Citation(marker=1, document_id=doc.document_id, chunk_id=doc.chunk_id,
                                 chunk_index=doc.chunk_index, title=doc.source, score=doc.relevance_score,
                                 quote=doc.content, location=doc.location, source_number=1, sentence_number=1)
        text = "".join(self.answer_deltas)
        answer = geri_pb2.GroundedAnswer(
            answered=True, text=self.revised_text or text, summary="Port 7443.", key_details=["TLS"],
            confidence=0.91, citations=[cite], sources_used=len(docs), extractive=bool(self.revised_text),
            revised=bool(self.revised_text))
        return geri_pb2.AnswerResponse(
            request_id=request.request.request_id, answer=answer,
            llm_response=common_pb2.LLMResponse(text="{}", json="{}", model_used="test-model", backend="embedded",
                                                prompt_tokens=10, completion_tokens=5, finish_reason="stop"),
            metadata=common_pb2.ResponseMetadata(warnings=["context trimmed"]))

    def Answer(self, request: geri_pb2.AnswerRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("Answer", request, context)
        return self._grounded(request)

    def AnswerStream(self, request: geri_pb2.AnswerRequest, context: grpc.ServicerContext) -> Iterator[Any]:  # noqa: N802
        self.rec.enter("AnswerStream", request, context)
        context.add_callback(self.stream_done.set)
        rid = request.request.request_id
        for i, delta in enumerate(self.answer_deltas, 1):
            yield geri_pb2.AnswerEvent(request_id=rid, text_delta=delta)
            if i == self.stream_break_after:
                return
        yield geri_pb2.AnswerEvent(request_id=rid, final=self._grounded(request))

    def RewriteQuery(self, request: geri_pb2.RewriteQueryRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("RewriteQuery", request, context)
        if self.fail_rewrite:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the model did not produce a valid reply")
        wolf = request.request
        conversation = wolf.metadata.session_id == "known" or len(wolf.generation.messages) > 0
        query = REWRITTEN if conversation else wolf.prompt
        return geri_pb2.RewriteQueryResponse(request_id=wolf.request_id, query=query, rewritten=query != wolf.prompt,
                                             variants=self.variants[: request.variants])
