"""The asyncio Odin client (grpc.aio), a thin twin of :class:`odin_client.client.OdinClient`.

It sends the same requests (:mod:`odin_client.messages`), returns the same result types
(:mod:`odin_client.results`) and follows the same :class:`~odin_client.retry.RetryPolicy`; only the
waiting (``asyncio.sleep``) and the channels (``grpc.aio``) differ. Indexing of folders stays in the
blocking client, where a progress bar and file I/O belong.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import grpc
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc, geri_pb2, geri_pb2_grpc

from odin_client import messages
from odin_client.answering.flow import (
    AskOptions,
    Call,
    GenerateCall,
    RetrieveCall,
    answer_policy,
    drive_async,
    grounded_ask,
)
from odin_client.answering.free_text import free_text_ask_async
from odin_client.calls import RetryListener, deadline_error, notify_retry
from odin_client.channels import call_metadata, channel_credentials, channel_options
from odin_client.connection import policy_from
from odin_client.errors import (
    ClientClosed,
    NotFound,
    StreamInterrupted,
    raise_from_rpc_error,
    status_of,
)
from odin_client.results import (
    Answer,
    Erasure,
    Generation,
    IndexResult,
    Retrieval,
    generation_from_proto,
    index_result_from_proto,
    retrieval_from_proto,
)
from odin_client.retry import RETRY_ALWAYS, RETRY_IDEMPOTENT_READ, RetryPolicy, attempt_timeout
from odin_client.settings import OdinSettings
from odin_client.status import IndexStatusInfo, ModelList, models_from_proto, status_from_proto
from odin_client.tools import ToolLoopResult, ToolRegistry
from odin_client.tools.driving import RUN_TOOLS_DOC, Confirm, audit_log, drive_tools_async, loop_options

T = TypeVar("T")


class AsyncClock(Protocol):
    """Time source and non-blocking sleeper (tests inject a fake)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        ...


class LoopClock:
    """The real clock."""

    def monotonic(self) -> float:
        """Seconds on the process's monotonic clock."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


class AsyncOdinClient:
    """asyncio client for Freki and Geri; ``async with`` it or ``await close()``."""

    def __init__(self, settings: OdinSettings | None = None, *, clock: AsyncClock | None = None,
                 rng: random.Random | None = None, on_retry: RetryListener | None = None) -> None:
        """Create a client; channels open on first use (inside the running event loop); ``on_retry`` as in
        :class:`~odin_client.client.OdinClient`."""
        self.on_retry = on_retry
        self.settings = settings or OdinSettings()
        self.policy: RetryPolicy = policy_from(self.settings)
        self.clock: AsyncClock = clock or LoopClock()
        self.rng = rng or random.Random()
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._closed = False
        self._metadata = call_metadata(self.settings)

    async def __aenter__(self) -> AsyncOdinClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close all channels; later calls raise :class:`~odin_client.errors.ClientClosed`."""
        self._closed = True
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()

    @property
    def open_targets(self) -> list[str]:
        """Targets with an open channel."""
        return list(self._channels)

    def _channel(self, target: str) -> grpc.aio.Channel:
        if self._closed:
            raise ClientClosed("the Odin client is closed; create a new AsyncOdinClient")
        channel = self._channels.get(target)
        if channel is None:
            creds = channel_credentials(self.settings)
            options = channel_options(self.settings)
            channel = (grpc.aio.insecure_channel(target, options=options) if creds is None
                       else grpc.aio.secure_channel(target, creds, options=options))
            self._channels[target] = channel
        return channel

    async def _retry_wait(self, exc: grpc.RpcError, attempts: int, retryable: frozenset[grpc.StatusCode],
                          deadline: float, service: str, method: str) -> None:
        """Sleep before the next attempt, or raise the converted error when we must give up."""
        delay = self.policy.next_delay(attempts=attempts, code=status_of(exc)[0], retryable=retryable,
                                       now=self.clock.monotonic(), deadline=deadline, rng=self.rng)
        if delay is None:
            raise_from_rpc_error(exc, service=service, method=method, attempts=attempts)
        notify_retry(self.on_retry, exc, service=service, method=method, attempt=attempts, delay=delay)
        await self.clock.sleep(delay)

    async def _unary(self, invoke: Callable[[float], Awaitable[T]], *, service: str, method: str,
                     budget_s: float, idempotent_read: bool) -> tuple[T, int]:
        retryable = RETRY_IDEMPOTENT_READ if idempotent_read else RETRY_ALWAYS
        deadline = self.clock.monotonic() + budget_s
        attempts = 0
        while True:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                raise deadline_error(service, method, budget_s, attempts)
            attempts += 1
            try:
                return await invoke(attempt_timeout(remaining, self.settings.attempt_timeout_s)), attempts
            except grpc.RpcError as exc:
                await self._retry_wait(exc, attempts, retryable, deadline, service, method)

    async def retrieve(self, query: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                       mode: str = "", tenant_id: str | None = None, query_variants: Sequence[str] = (),
                       deadline_s: float | None = None) -> Retrieval:
        """Retrieve chunks for ``query`` (see :meth:`OdinClient.retrieve`)."""
        request = messages.retrieve_request(query, tenant_id=self._tenant(tenant_id), top_k=top_k,
                                            filters=filters, mode=mode, query_variants=query_variants)
        stub = freki_pb2_grpc.FrekiServiceStub(self._channel(self.settings.freki_target))
        start = time.perf_counter()
        resp, attempts = await self._unary(
            lambda t: stub.RetrieveContext(request, timeout=t, metadata=self._metadata),
            service="freki", method="RetrieveContext", budget_s=deadline_s or self.settings.deadline_s,
            idempotent_read=True)
        return retrieval_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    async def generate(self, prompt: str, *, context: common_pb2.RAGContext | None = None,
                       tenant_id: str | None = None, deadline_s: float | None = None,
                       **options: Any) -> Generation:
        """Generate a full answer; ``options`` as for :meth:`OdinClient.generate` (json_schema, session_id, …)."""
        request = messages.generate_request(prompt, tenant_id=self._tenant(tenant_id), context=context,
                                            **options)
        stub = geri_pb2_grpc.GeriServiceStub(self._channel(self.settings.geri_target))
        start = time.perf_counter()
        resp, attempts = await self._unary(
            lambda t: stub.Generate(request, timeout=t, metadata=self._metadata), service="geri",
            method="Generate", budget_s=deadline_s or self.settings.generate_deadline_s,
            idempotent_read=False)
        return generation_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    async def generate_stream(self, prompt: str, *, context: common_pb2.RAGContext | None = None,
                              tenant_id: str | None = None, deadline_s: float | None = None,
                              **options: Any) -> AsyncIterator[str | Generation]:
        """Text deltas, then one :class:`Generation`; retried only before the first event."""
        request = messages.generate_request(prompt, tenant_id=self._tenant(tenant_id), context=context,
                                            **options)
        stub = geri_pb2_grpc.GeriServiceStub(self._channel(self.settings.geri_target))
        budget = deadline_s or self.settings.generate_deadline_s
        deadline = self.clock.monotonic() + budget
        start = time.perf_counter()
        attempts = 0
        while True:
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                raise deadline_error("geri", "GenerateStream", budget, attempts)
            attempts += 1
            call = stub.GenerateStream(request, timeout=remaining, metadata=self._metadata)
            try:
                event = await call.read()
                break
            except grpc.RpcError as exc:
                await self._retry_wait(exc, attempts, RETRY_ALWAYS, deadline, "geri", "GenerateStream")
        received = 0
        try:
            while event is not grpc.aio.EOF:
                received += 1
                kind = event.WhichOneof("event")
                if kind == "text_delta":
                    yield event.text_delta
                elif kind == "final":
                    yield generation_from_proto(event.final, elapsed_ms=_ms_since(start), attempts=attempts)
                    return
                event = await call.read()
        except grpc.RpcError as exc:
            raise_from_rpc_error(exc, service="geri", method="GenerateStream", attempts=attempts,
                                 after_messages=received)
        finally:
            call.cancel()
        raise StreamInterrupted(
            f"Geri (generation) GenerateStream ended after {received} event(s) without its final event; "
            "the answer is incomplete", service="geri", details="stream ended without final event")

    async def ask(self, question: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                  mode: str = "", tenant_id: str | None = None, session_id: str = "", owner_id: str = "",
                  grounded: bool = True, allow_no_context: bool = False,
                  on_text: Callable[[str], None] | None = None, **options: Any) -> Answer:
        """Answer from the indexed documents (see :meth:`OdinClient.ask`): grounded by default."""
        if not grounded:
            return await free_text_ask_async(self, question, top_k=top_k, filters=filters, mode=mode,
                                             tenant_id=tenant_id, allow_no_context=allow_no_context,
                                             on_text=on_text, **options)
        opts = AskOptions(top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                          model=options.get("model", ""), max_tokens=options.get("max_tokens"),
                          session_id=session_id, owner_id=owner_id)
        answer = await drive_async(grounded_ask(question, opts, answer_policy(self.settings)), self._perform)
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer

    async def _perform(self, call: Call) -> Any:
        if isinstance(call, RetrieveCall):
            return await self.retrieve(call.query, query_variants=call.variants, **call.options)
        if isinstance(call, GenerateCall):
            return await self.generate(call.prompt, **call.options)
        return await self.get_session(call.session_id, tenant_id=call.tenant_id)

    async def run_tools(self, question: str, registry: ToolRegistry, *, confirm: Confirm | None = None,
                  actor: str = "", max_steps: int | None = None, first_tool_choice: str = "auto",
                  **options: Any) -> ToolLoopResult:
        opts = loop_options(self.settings, max_steps=max_steps, first_tool_choice=first_tool_choice, **options)
        return await drive_tools_async(self.generate, question, registry, opts, confirm=confirm, actor=actor,
                                timeout_s=self.settings.tool_timeout_s,
                                audit=audit_log(self.settings.tool_audit_log))

    run_tools.__doc__ = RUN_TOOLS_DOC

    async def get_session(self, session_id: str, *, tenant_id: str | None = None) -> geri_pb2.Session | None:
        """A conversation's stored turns in Geri, or None."""
        stub = geri_pb2_grpc.GeriServiceStub(self._channel(self.settings.geri_target))
        request = geri_pb2.SessionRequest(request_id=messages.new_request_id(), tenant_id=self._tenant(tenant_id),
                                          session_id=session_id)
        try:
            resp, _ = await self._unary(
                lambda t: stub.GetSession(request, timeout=t, metadata=self._metadata), service="geri",
                method="GetSession", budget_s=self.settings.deadline_s, idempotent_read=True)
        except NotFound:
            return None
        return resp  # type: ignore[no-any-return]

    async def erase_owner(self, owner_id: str, *, tenant_id: str | None = None) -> Erasure:
        """GDPR erasure of a data owner in Freki and Geri (see :meth:`OdinClient.erase_owner`)."""
        tenant = self._tenant(tenant_id)
        freki = freki_pb2_grpc.FrekiServiceStub(self._channel(self.settings.freki_target))
        geri = geri_pb2_grpc.GeriServiceStub(self._channel(self.settings.geri_target))
        docs_req = freki_pb2.DeleteOwnerDataRequest(request_id=messages.new_request_id(), tenant_id=tenant,
                                                    owner_id=owner_id)
        sessions_req = geri_pb2.DeleteOwnerSessionsRequest(request_id=messages.new_request_id(), tenant_id=tenant,
                                                           owner_id=owner_id)
        docs, _ = await self._unary(
            lambda t: freki.DeleteOwnerData(docs_req, timeout=t, metadata=self._metadata), service="freki",
            method="DeleteOwnerData", budget_s=self.settings.index_deadline_s, idempotent_read=False)
        sessions, _ = await self._unary(
            lambda t: geri.DeleteOwnerSessions(sessions_req, timeout=t, metadata=self._metadata), service="geri",
            method="DeleteOwnerSessions", budget_s=self.settings.deadline_s, idempotent_read=False)
        return Erasure(documents=docs.documents_deleted, chunks=docs.chunks_deleted,
                       sessions=sessions.sessions_deleted)

    async def index_text(self, text: str, *, source: str, document_id: str = "", content_type: str = "",
                         metadata: dict[str, str] | None = None, tenant_id: str | None = None) -> IndexResult:
        """Index one text document."""
        request = messages.index_text_request(text, tenant_id=self._tenant(tenant_id), source=source,
                                              document_id=document_id, content_type=content_type,
                                              metadata=metadata)
        stub = freki_pb2_grpc.FrekiServiceStub(self._channel(self.settings.freki_target))
        resp, _ = await self._unary(
            lambda t: stub.IndexDocument(request, timeout=t, metadata=self._metadata), service="freki",
            method="IndexDocument", budget_s=self.settings.index_deadline_s, idempotent_read=False)
        return index_result_from_proto(resp, source)

    async def status(self, *, tenant_id: str | None = None) -> IndexStatusInfo:
        """Freki's index status."""
        stub = freki_pb2_grpc.FrekiServiceStub(self._channel(self.settings.freki_target))
        request = freki_pb2.GetIndexStatusRequest(tenant_id=self._tenant(tenant_id))
        resp, _ = await self._unary(
            lambda t: stub.GetIndexStatus(request, timeout=t, metadata=self._metadata), service="freki",
            method="GetIndexStatus", budget_s=self.settings.deadline_s, idempotent_read=True)
        return status_from_proto(resp)

    async def models(self) -> ModelList:
        """Geri's models."""
        stub = geri_pb2_grpc.GeriServiceStub(self._channel(self.settings.geri_target))
        resp, _ = await self._unary(
            lambda t: stub.ListModels(geri_pb2.ListModelsRequest(), timeout=t, metadata=self._metadata),
            service="geri", method="ListModels", budget_s=self.settings.deadline_s, idempotent_read=True)
        return models_from_proto(resp)

    def _tenant(self, tenant_id: str | None) -> str:
        return self.settings.tenant_id if tenant_id is None else tenant_id
