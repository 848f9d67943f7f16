"""Error mapping: the one server interceptor where exceptions become gRPC statuses.

``ErrorMappingInterceptor`` is the one place where exceptions become gRPC statuses:
domain errors keep their code and message; unknown exceptions become INTERNAL with a
generic message (details stay in the log, keyed by request id, never sent to clients).
Every status also carries rich details (a stable reason, a recovery hint, retry delay, the bad field:
:mod:`wolf_service.status_details`); the plain code and message are what they always were.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from wolf_service import status_details
from wolf_service.audit_log import identifier
from wolf_service.errors import status_code_of
from wolf_service.identifiers import MAX_REQUEST_ID_CHARS
from wolf_service.wrapping import StreamCall, UnaryCall, WrappingInterceptor, envelope_of

log = logging.getLogger("wolf_service.errors")

REQUEST_ID_HEADER = "x-request-id"
# Error details are meant to be read; a message quoting client input at length is a bug, never a feature.
MAX_DETAILS = 2000


class MalformedRequest:
    """Stands in for a request whose bytes are not a valid protobuf message, so the handler can answer
    INVALID_ARGUMENT (grpcio itself answers INTERNAL when a deserializer raises). Every field reads as ""."""

    def __init__(self, type_name: str, problem: str) -> None:
        self.type_name = type_name
        self.problem = problem

    def __getattr__(self, name: str) -> str:
        return ""


def tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """``deserializer`` returning a MalformedRequest instead of raising on bytes that do not parse."""
    if deserializer is None:
        return None

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:  # protobuf's DecodeError, or a str field that is not UTF-8
            owner = getattr(deserializer, "__self__", None)
            return MalformedRequest(getattr(owner, "__name__", "request"), str(exc)[:200])

    return deserialize


def bounded(text: str, limit: int = MAX_DETAILS) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    return text if len(text) <= limit else f"{text[: limit - 40]}… ({len(text):,} characters in all)"


def request_id_of(request: Any, context: grpc.ServicerContext) -> str:
    """Find the request id, as it is logged: the message's ``request_id`` field, then ``x-request-id``
    metadata; one over MAX_REQUEST_ID_CHARS characters is cut and tagged with its digest."""
    rid = getattr(envelope_of(request), "request_id", "") or ""
    if rid:
        return identifier(str(rid), MAX_REQUEST_ID_CHARS)
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_HEADER and value:
            return identifier(str(value), MAX_REQUEST_ID_CHARS)
    return f"gen-{uuid.uuid4().hex[:12]}"


def status_for(exc: BaseException, rpc: str, request_id: str) -> tuple[grpc.StatusCode, str]:
    """The status code and details a client gets for ``exc``, logged: domain errors keep their message
    (bounded); anything else is INTERNAL with a generic message, its traceback in the log only."""
    code = status_code_of(exc)
    if code == grpc.StatusCode.INTERNAL:
        log.exception("internal error in %s (request_id=%s)", rpc, request_id, exc_info=exc)
        return code, f"internal error (request_id={request_id}); see server log"
    log.info("%s failed with %s (request_id=%s): %s", rpc, code.name, request_id, bounded(str(exc), 500))
    return code, bounded(str(exc))


def _abort_for(exc: BaseException, rpc: str, request: Any, context: grpc.ServicerContext) -> None:
    request_id = request_id_of(request, context)
    code, message = status_for(exc, rpc, request_id)
    status_details.abort(context, code, message, method=rpc, exc=exc, request_id=request_id)


def _is_abort(exc: BaseException, context: grpc.ServicerContext) -> bool:
    # context.abort() raises a bare Exception after setting the code; let it through untouched.
    return type(exc) is Exception and context.code() is not None  # type: ignore[attr-defined]


def _refuse_malformed(method: str, request: Any, context: grpc.ServicerContext) -> None:
    if isinstance(request, MalformedRequest):
        status_details.abort(
            context, grpc.StatusCode.INVALID_ARGUMENT,
            f"the request is not a valid {request.type_name} protobuf message ({request.problem})",
            method=method, reason="MALFORMED_REQUEST")


class ErrorMappingInterceptor(WrappingInterceptor):
    """Map exceptions raised by handlers to gRPC status codes, for unary and streaming RPCs; answer bytes
    that are no valid request message with INVALID_ARGUMENT."""

    wrap_deserializer = staticmethod(tolerant)

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        _refuse_malformed(method, request, context)
        try:
            return call(request, context)
        except Exception as exc:
            if _is_abort(exc, context):
                raise
            _abort_for(exc, method, request, context)

    def each_message(self, method: str, message: Any, context: grpc.ServicerContext) -> Any:
        _refuse_malformed(method, message, context)
        return message

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        _refuse_malformed(method, request, context)
        try:
            yield from call(request, context)
        except Exception as exc:
            if _is_abort(exc, context):
                raise
            if isinstance(exc, grpc.RpcError) and not context.is_active():
                # The client's stream of requests broke off (it cancelled, was killed, or its send failed): the
                # client's doing, not an internal error — no traceback any caller could fill the log with.
                log.info("%s: the client ended the call mid-stream (request_id=%s)", method,
                         request_id_of(request, context))
                status_details.abort(context, grpc.StatusCode.CANCELLED, "the client ended the call", method=method,
                                     reason="CLIENT_ENDED_CALL")
            _abort_for(exc, method, request, context)
