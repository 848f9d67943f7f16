"""Server interceptors shared by Freki and Geri.

``ErrorMappingInterceptor`` is the one place where exceptions become gRPC statuses:
domain errors keep their code and message; unknown exceptions become INTERNAL with a
generic message (details stay in the log, keyed by request id, never sent to clients).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from wolf_service.errors import status_code_of

log = logging.getLogger("wolf_service.errors")

REQUEST_ID_HEADER = "x-request-id"


def request_id_of(request: Any, context: grpc.ServicerContext) -> str:
    """Find the request id: the message's ``request_id`` field, then ``x-request-id`` metadata."""
    rid = getattr(request, "request_id", "") or ""
    if rid:
        return str(rid)
    for key, value in context.invocation_metadata() or ():
        if key == REQUEST_ID_HEADER and value:
            return str(value)
    return f"gen-{uuid.uuid4().hex[:12]}"


def _abort_for(exc: BaseException, rpc: str, request: Any, context: grpc.ServicerContext) -> None:
    code = status_code_of(exc)
    rid = request_id_of(request, context)
    if code == grpc.StatusCode.INTERNAL:
        log.exception("internal error in %s (request_id=%s)", rpc, rid, exc_info=exc)
        context.abort(code, f"internal error (request_id={rid}); see server log")
    else:
        log.info("%s failed with %s (request_id=%s): %s", rpc, code.name, rid, exc)
        context.abort(code, str(exc))


def _is_abort(exc: BaseException, context: grpc.ServicerContext) -> bool:
    # context.abort() raises a bare Exception after setting the code; let it through untouched.
    return type(exc) is Exception and context.code() is not None  # type: ignore[attr-defined]


class ErrorMappingInterceptor(grpc.ServerInterceptor):
    """Map exceptions raised by handlers to gRPC status codes, for unary and streaming RPCs."""

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        rpc = handler_call_details.method  # type: ignore[attr-defined]
        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            def unary_unary(request: Any, context: grpc.ServicerContext) -> Any:
                try:
                    return inner_uu(request, context)
                except Exception as exc:
                    if _is_abort(exc, context):
                        raise
                    _abort_for(exc, rpc, request, context)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            inner_us = handler.unary_stream

            def unary_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                try:
                    yield from inner_us(request, context)
                except Exception as exc:
                    if _is_abort(exc, context):
                        raise
                    _abort_for(exc, rpc, request, context)

            return grpc.unary_stream_rpc_method_handler(
                unary_stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler
