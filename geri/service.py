"""The ``wolf.v1.GeriService`` servicer: gRPC glue around :class:`~geri.generation.GenerationPipeline`.

Exceptions are left to :class:`wolf_service.error_mapping.ErrorMappingInterceptor`. Each call
gets a cancel event that gRPC sets when the RPC ends for any reason (client cancel, deadline,
server shutdown past its grace), which is what stops the backend mid-generation.

A cancelled stream needs one more step: gRPC stops pulling from the response iterator, so a
generator suspended at a ``yield`` would never run again to notice the event, and the backend
(e.g. an open Ollama HTTP stream) would linger until garbage collection. The termination
callback therefore also closes the iterator when no thread is inside it, which runs the
backends' ``finally`` blocks (close the HTTP response, stop the model thread) right away.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Iterator
from typing import TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.answering.pipeline import AnswerPipeline, AnswerStep
from geri.backends.base import ModelDescription
from geri.generation import GenerationPipeline, StreamEvent
from geri.routing import Router
from geri.sessions import SessionStore
from geri.sessions.store import SessionRecord
from geri.settings import GeriSettings
from geri.validation import MAX_ID_CHARS, require_request_id
from wolf_service.errors import Cancelled, InvalidArgument, NotFound, ServiceError
from wolf_service.identity import user_id_of

T = TypeVar("T")

SERVICE_NAME = geri_pb2.DESCRIPTOR.services_by_name["GeriService"].full_name


def cancel_event_for(context: grpc.ServicerContext) -> threading.Event:
    """An event set once the RPC terminates (already set if it has)."""
    event = threading.Event()
    if not context.add_callback(event.set):
        event.set()
    return event


class ClosableStream(Iterator[T]):
    """An iterator that another thread can close, but only while no thread is inside ``next``."""

    def __init__(self, events: Generator[T, None, None]) -> None:
        self._events = events
        self._lock = threading.Lock()

    def __next__(self) -> T:
        with self._lock:
            return next(self._events)

    def close_if_idle(self) -> None:
        """Close the generator unless it is running (then it sees the cancel event itself)."""
        if self._lock.acquire(blocking=False):
            try:
                self._events.close()
            finally:
                self._lock.release()


def closable_for(context: grpc.ServicerContext, events: Generator[T, None, None],
                 cancel: threading.Event) -> ClosableStream[T]:
    """``events`` as a stream that sets ``cancel`` and closes itself when the RPC terminates."""
    stream = ClosableStream(events)

    def on_terminate() -> None:
        cancel.set()
        stream.close_if_idle()

    if not context.add_callback(on_terminate):
        on_terminate()
    return stream


class GeriServicer(geri_pb2_grpc.GeriServiceServicer):
    """Generation over gRPC: unary, server-streaming, and the model list."""

    def __init__(self, settings: GeriSettings, router: Router, sessions: SessionStore) -> None:
        self._settings = settings
        self._router = router
        self._sessions = sessions
        self._pipeline = GenerationPipeline(settings, router, sessions)
        self._answers = AnswerPipeline(settings, self._pipeline, sessions)
        self.settings_reloaded = self._answers.settings_reloaded  # a reload hook (geri.server)

    def Generate(  # noqa: N802 - name fixed by the proto
        self, request: common_pb2.WolfRequest, context: grpc.ServicerContext
    ) -> common_pb2.WolfResponse:
        """Generate a complete answer."""
        user = self._bind_user(request, context)
        cancel = cancel_event_for(context)
        for event in self._pipeline.run(request, cancel, user=user):
            if event.response is not None:
                return event.response
        raise Cancelled(f"generation of request {request.request_id} was cancelled")

    def GenerateStream(  # noqa: N802
        self, request: common_pb2.WolfRequest, context: grpc.ServicerContext
    ) -> Iterator[geri_pb2.GenerateEvent]:
        """Stream text (and reasoning) deltas, then one final event with the full response."""
        user = self._bind_user(request, context)
        cancel = threading.Event()
        events: ClosableStream[StreamEvent] = closable_for(
            context, self._pipeline.run(request, cancel, user=user), cancel)
        rid = request.request_id
        for event in events:
            if cancel.is_set():
                return  # nobody is listening; the backend has been told to stop
            if event.kind == "text":
                yield geri_pb2.GenerateEvent(request_id=rid, text_delta=event.text)
            elif event.kind == "thinking":
                yield geri_pb2.GenerateEvent(request_id=rid, thinking_delta=event.text)
            elif event.kind == "final":
                yield geri_pb2.GenerateEvent(request_id=rid, final=event.response)

    def Answer(  # noqa: N802
        self, request: geri_pb2.AnswerRequest, context: grpc.ServicerContext
    ) -> geri_pb2.AnswerResponse:
        """A grounded answer with checked citations, or an abstention saying why."""
        user = self._bind_user(request.request, context)
        cancel = cancel_event_for(context)
        for event in self._answers.answer(request, cancel, user=user):
            if event.response is not None:
                return event.response
        raise AssertionError("the answer pipeline ends with a response or raises")  # pragma: no cover

    def AnswerStream(  # noqa: N802
        self, request: geri_pb2.AnswerRequest, context: grpc.ServicerContext
    ) -> Iterator[geri_pb2.AnswerEvent]:
        """Provisional answer text as the model writes it, then the checked answer."""
        user = self._bind_user(request.request, context)
        cancel = threading.Event()
        events: ClosableStream[AnswerStep] = closable_for(
            context, self._answers.answer(request, cancel, stream=True, user=user), cancel)
        rid = request.request.request_id
        for event in events:
            if cancel.is_set():
                return  # nobody is listening; the backend has been told to stop
            if event.kind == "text":
                yield geri_pb2.AnswerEvent(request_id=rid, text_delta=event.text)
            else:
                yield geri_pb2.AnswerEvent(request_id=rid, final=event.response)

    def RewriteQuery(  # noqa: N802
        self, request: geri_pb2.RewriteQueryRequest, context: grpc.ServicerContext
    ) -> geri_pb2.RewriteQueryResponse:
        """A follow-up as a standalone search query (from its conversation), and paraphrases when asked."""
        user = self._bind_user(request.request, context)
        return self._answers.rewrite(request, cancel_event_for(context), user=user)

    def _user(self, context: grpc.ServicerContext) -> str:
        return user_id_of(context, self._settings.security.user_id_max_chars)  # validated by the auth interceptor

    def _bind_user(self, request: common_pb2.WolfRequest, context: grpc.ServicerContext) -> str:
        """The caller's user id, whose own sessions ``metadata.session_id`` names (the stores key sessions by
        user, so another user's session id starts a new conversation). Without an explicit
        ``metadata.owner_id`` the user is also the session's data owner, so erasing the user erases it."""
        user = self._user(context)
        if user and not request.metadata.owner_id:
            request.metadata.owner_id = user
        return user

    def ListModels(  # noqa: N802
        self, request: geri_pb2.ListModelsRequest, context: grpc.ServicerContext
    ) -> geri_pb2.ListModelsResponse:
        """Every entry of the model list in fallback order (with what its server lists), and its breaker state."""
        models: list[geri_pb2.ModelInfo] = []
        seen: set[tuple[str, str]] = set()
        for route in self._router.routes:
            try:
                listed = route.backend.list_models()
            except ServiceError:  # a backend that is down still shows its entry, with its state
                listed = []
            entry = ModelDescription(name=route.config.name, backend=route.backend.kind)
            for m in [entry, *listed] if all(m.name != entry.name for m in listed) else listed:
                if (m.name, m.backend) in seen:
                    continue
                seen.add((m.name, m.backend))
                models.append(geri_pb2.ModelInfo(
                    name=m.name, backend=m.backend, size_bytes=m.size_bytes, context_length=m.context_length,
                    family=m.family, state=route.state, priority=route.priority,
                ))
        return geri_pb2.ListModelsResponse(models=models, default_model=self._router.default_model)

    def GetSession(  # noqa: N802
        self, request: geri_pb2.SessionRequest, context: grpc.ServicerContext
    ) -> geri_pb2.Session:
        """One of the caller's conversations; NOT_FOUND when the caller's user has none by that id in the tenant
        (another user's session answers exactly as a missing one: its existence is not revealed)."""
        tenant, session_id = _session_key(request)
        record = self._sessions.get(tenant, session_id, user=self._user(context))
        if record is None:
            raise NotFound(f"session {session_id[:64]!r} does not exist in tenant {tenant!r} (or it expired)")
        return _session_message(record)

    def DeleteSession(  # noqa: N802
        self, request: geri_pb2.SessionRequest, context: grpc.ServicerContext
    ) -> geri_pb2.DeleteSessionResponse:
        """Forget one of the caller's conversations (idempotent: ``deleted`` says whether it existed; another
        user's session is not touched and answers ``deleted=false``, as a missing one)."""
        tenant, session_id = _session_key(request)
        deleted = self._sessions.delete(tenant, session_id, user=self._user(context))
        return geri_pb2.DeleteSessionResponse(request_id=request.request_id, deleted=deleted)

    def DeleteOwnerSessions(  # noqa: N802
        self, request: geri_pb2.DeleteOwnerSessionsRequest, context: grpc.ServicerContext
    ) -> geri_pb2.DeleteOwnerSessionsResponse:
        """GDPR erasure: forget every conversation of a data owner in the tenant."""
        require_request_id(request.request_id)
        if not request.owner_id:
            raise InvalidArgument("owner_id must be non-empty: erasure acts on one data owner")
        tenant = request.tenant_id or "default"
        deleted = self._sessions.delete_owner(tenant, request.owner_id)
        self._answers.forget_tenant(tenant)  # cached answers may quote the owner's documents
        return geri_pb2.DeleteOwnerSessionsResponse(request_id=request.request_id, sessions_deleted=deleted)


def _session_key(request: geri_pb2.SessionRequest) -> tuple[str, str]:
    require_request_id(request.request_id)
    if not request.session_id:
        raise InvalidArgument("session_id must be non-empty")
    if len(request.session_id) > MAX_ID_CHARS:
        raise InvalidArgument(f"session_id is {len(request.session_id):,} characters; the limit is {MAX_ID_CHARS}")
    return request.tenant_id or "default", request.session_id


def _timestamp(epoch: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int(epoch * 1e9))
    return ts


def _session_message(record: SessionRecord) -> geri_pb2.Session:
    return geri_pb2.Session(
        session_id=record.session_id, tenant_id=record.tenant, owner_id=record.owner_id, user_id=record.user_id,
        turns=[common_pb2.ChatTurn(
            role=t.role, content=t.content, tool_call_id=t.tool_call_id,
            tool_calls=[common_pb2.ToolCall(id=c.id, name=c.name, arguments_json=json.dumps(c.arguments))
                        for c in t.tool_calls],
        ) for t in record.turns],
        updated_at=_timestamp(record.updated_at), expires_at=_timestamp(record.expires_at),
    )
