"""The asyncio Odin client (grpc.aio), the twin of :class:`odin_client.client.OdinClient`: the same methods with the
same arguments, results, errors, deadlines and retries, awaited.

It sends the same requests (:mod:`odin_client.protocol.messages`, :mod:`odin_client.protocol.specs`), returns the
same result types and follows the same :class:`~odin_client.protocol.retry.RetryPolicy`
(:class:`~odin_client.protocol.attempts.Attempts`); only the waiting (``asyncio.sleep``) and the channels
(``grpc.aio``) differ. Its calls are in mixins mirroring the blocking client's: :mod:`.documents` and
:mod:`.graph`. ``index(paths)`` (walking folders) stays in the blocking client, where the CLI's progress and a
tree walk belong; ``index_documents`` takes the files it finds (reading each in a worker thread, off the event
loop).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from wolf.v1 import common_pb2, geri_pb2

from odin_client.asking.free_text import free_text_ask_async
from odin_client.asking.grounded import AskOptions, Call, Prepared, RetrieveCall, finish, prepare
from odin_client.client._async.documents import AsyncDocumentCalls
from odin_client.client._async.graph import AsyncGraphCalls
from odin_client.client.async_connection import AsyncClock, LoopClock
from odin_client.protocol import messages
from odin_client.protocol import specs as call_specs
from odin_client.protocol.flows import drive_async
from odin_client.tools import ToolLoopResult, ToolRegistry
from odin_client.tools.driving import RUN_TOOLS_DOC, Confirm, audit_log, drive_tools_async, loop_options
from odin_client.types.errors import NotFound, StreamInterrupted
from odin_client.types.results import (
    Answer,
    Embeddings,
    Erasure,
    Generation,
    Retrieval,
    generation_from_proto,
    retrieval_from_proto,
)
from odin_client.types.status import IndexStatusInfo, ModelList

__all__ = ["AsyncClock", "AsyncOdinClient", "LoopClock"]


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


class AsyncOdinClient(AsyncDocumentCalls, AsyncGraphCalls):
    """asyncio client for Freki and Geri; ``async with`` it or ``await close()``."""

    async def retrieve(self, query: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                       mode: str = "", score_threshold: float | None = None, document_ids: Iterable[str] = (),
                       query_variants: Iterable[str] = (), tenant_id: str | None = None,
                       deadline_s: float | None = None, graph_expand: bool | None = None,
                       explain: bool = False) -> Retrieval:
        """Retrieve the chunks most relevant to ``query`` (arguments as :meth:`OdinClient.retrieve`)."""
        request = messages.retrieve_request(
            query, tenant_id=self._tenant(tenant_id), top_k=top_k, filters=filters, mode=mode,
            score_threshold=score_threshold, document_ids=list(document_ids), query_variants=list(query_variants),
            graph_expand=graph_expand, explain=explain,
        )
        stub = self._freki()
        start = time.perf_counter()
        resp, attempts = await self._unary(
            lambda t: stub.RetrieveContext(request, timeout=t, metadata=self._metadata),
            service="freki", method="RetrieveContext", budget_s=deadline_s or self.settings.deadline_s,
            idempotent_read=True)
        return retrieval_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    async def generate(self, prompt: str, *, context: common_pb2.RAGContext | None = None,
                       tenant_id: str | None = None, deadline_s: float | None = None,
                       **options: Any) -> Generation:
        """Generate a full answer; ``options`` as for :meth:`OdinClient.generate` (model, max_tokens, json_schema,
        session_id, …)."""
        request = messages.generate_request(prompt, tenant_id=self._tenant(tenant_id), context=context,
                                            **options)
        stub = self._geri()
        start = time.perf_counter()
        resp, attempts = await self._unary(
            lambda t: stub.Generate(request, timeout=t, metadata=self._metadata), service="geri",
            method="Generate", budget_s=deadline_s or self.settings.generate_deadline_s,
            idempotent_read=False)
        return generation_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    async def generate_stream(self, prompt: str, *, context: common_pb2.RAGContext | None = None,
                              tenant_id: str | None = None, deadline_s: float | None = None,
                              **options: Any) -> AsyncIterator[str | Generation]:
        """Text deltas, then one :class:`Generation`; retried only before the first event.

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        request = messages.generate_request(prompt, tenant_id=self._tenant(tenant_id), context=context,
                                            **options)
        stub = self._geri()
        tries = self._attempts("geri", "GenerateStream", deadline_s or self.settings.generate_deadline_s,
                               idempotent_read=False)
        start = time.perf_counter()
        events = self._server_stream(lambda t: stub.GenerateStream(request, timeout=t, metadata=self._metadata),
                                     tries)
        received = 0
        try:
            async for event in events:
                received += 1
                kind = event.WhichOneof("event")
                if kind == "text_delta":
                    yield event.text_delta
                elif kind == "final":
                    yield generation_from_proto(event.final, elapsed_ms=_ms_since(start), attempts=tries.count)
                    return
        finally:
            await events.aclose()  # a consumer that stops early cancels the call now
        raise StreamInterrupted(
            f"Geri (generation) GenerateStream ended after {received} event(s) without its final event; "
            "the answer is incomplete", service="geri", details="stream ended without final event")

    async def ask(self, question: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                  mode: str = "", tenant_id: str | None = None, model: str = "", max_tokens: int | None = None,
                  session_id: str = "", owner_id: str = "", grounded: bool = True, allow_no_context: bool = False,
                  temperature: float | None = None, on_text: Callable[[str], None] | None = None,
                  history: Iterable[common_pb2.ChatTurn] = ()) -> Answer:
        """Answer from the indexed documents (see :meth:`OdinClient.ask`): grounded by default."""
        if not grounded:
            return await free_text_ask_async(self, question, top_k=top_k, filters=filters, mode=mode,
                                             tenant_id=tenant_id, allow_no_context=allow_no_context, model=model,
                                             max_tokens=max_tokens, temperature=temperature, on_text=on_text)
        prepared = await self._prepare(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                                       model=model, max_tokens=max_tokens, session_id=session_id, owner_id=owner_id,
                                       temperature=temperature, history=history)
        spec = call_specs.answer(self.settings, prepared.request)
        stub = self._geri()
        started = time.perf_counter()
        resp, attempts = await self._unary(
            lambda t: stub.Answer(spec.request, timeout=t, metadata=self._metadata), service="geri",
            method="Answer", budget_s=spec.budget_s, idempotent_read=spec.idempotent_read)
        answer = finish(prepared, resp, answer_started=started, attempts=attempts)
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer

    async def ask_stream(self, question: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                         mode: str = "", tenant_id: str | None = None, model: str = "",
                         max_tokens: int | None = None, session_id: str = "", owner_id: str = "",
                         temperature: float | None = None,
                         history: Iterable[common_pb2.ChatTurn] = ()) -> AsyncIterator[str | Answer]:
        """Provisional text deltas, then one checked :class:`Answer` (see :meth:`OdinClient.ask_stream`).

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        prepared = await self._prepare(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                                       model=model, max_tokens=max_tokens, session_id=session_id, owner_id=owner_id,
                                       temperature=temperature, history=history)
        spec = call_specs.answer_stream(self.settings, prepared.request)
        stub = self._geri()
        tries = self._attempts("geri", "AnswerStream", spec.budget_s, idempotent_read=spec.idempotent_read)
        started = time.perf_counter()
        events = self._server_stream(lambda t: stub.AnswerStream(spec.request, timeout=t, metadata=self._metadata),
                                     tries)
        received = 0
        try:
            async for event in events:
                received += 1
                kind = event.WhichOneof("event")
                if kind == "text_delta":
                    yield event.text_delta
                elif kind == "final":
                    yield finish(prepared, event.final, answer_started=started, attempts=tries.count)
                    return
        finally:
            await events.aclose()  # a consumer that stops early cancels the call now
        raise StreamInterrupted(
            f"Geri (generation) AnswerStream ended after {received} event(s) without its final event; "
            "the answer is incomplete", service="geri", details="stream ended without final event")

    async def _prepare(self, question: str, *, tenant_id: str | None, history: Iterable[common_pb2.ChatTurn],
                       **options: Any) -> Prepared:
        opts = AskOptions(self._tenant(tenant_id), history=tuple(history), **options)
        return await drive_async(prepare(question, opts, self.settings), self._perform)

    async def _perform(self, call: Call) -> Any:
        if isinstance(call, RetrieveCall):
            return await self.retrieve(call.query, query_variants=call.variants, **call.options)
        return await self._call(call_specs.rewrite_query(self.settings, call.request))

    async def run_tools(self, question: str, registry: ToolRegistry, *, confirm: Confirm | None = None,
                  actor: str = "", max_steps: int | None = None, first_tool_choice: str = "auto",
                  **options: Any) -> ToolLoopResult:
        opts = loop_options(self.settings, max_steps=max_steps, first_tool_choice=first_tool_choice, **options)
        return await drive_tools_async(self.generate, question, registry, opts, confirm=confirm, actor=actor,
                                timeout_s=self.settings.tool_timeout_s,
                                audit=audit_log(self.settings.tool_audit_log))

    run_tools.__doc__ = RUN_TOOLS_DOC

    async def get_session(self, session_id: str, *, tenant_id: str | None = None) -> geri_pb2.Session | None:
        """A conversation's stored turns in Geri, or None when it does not exist (or expired)."""
        try:
            return await self._call(call_specs.get_session(self.settings, session_id, tenant_id=tenant_id))
        except NotFound:
            return None

    async def delete_session(self, session_id: str, *, tenant_id: str | None = None) -> bool:
        """Forget one conversation; whether it existed."""
        return await self._call(call_specs.delete_session(self.settings, session_id, tenant_id=tenant_id))

    async def erase_owner(self, owner_id: str, *, tenant_id: str | None = None) -> Erasure:
        """GDPR erasure of a data owner everywhere: Freki's documents and Geri's conversations."""
        documents, sessions = call_specs.erase_owner(self.settings, owner_id, tenant_id=tenant_id)
        return call_specs.erasure(await self._call(documents), await self._call(sessions))

    async def embed(self, texts: Sequence[str], *, tenant_id: str | None = None) -> Embeddings:
        """Embed texts with Freki's embedding model (unit vectors, in order)."""
        return await self._call(call_specs.embed(self.settings, texts, tenant_id=tenant_id))

    async def status(self, *, tenant_id: str | None = None, deadline_s: float | None = None) -> IndexStatusInfo:
        """Freki's index status (document and chunk counts, embedding model, store)."""
        return await self._call(call_specs.index_status(self.settings, tenant_id=tenant_id, deadline_s=deadline_s))

    async def models(self, *, deadline_s: float | None = None) -> ModelList:
        """Models Geri can serve, and its default."""
        return await self._call(call_specs.list_models(self.settings, deadline_s=deadline_s))
