"""Error mapping: the one server interceptor where exceptions become gRPC statuses.

``ErrorMappingInterceptor`` is the one place where exceptions become gRPC statuses:
domain errors keep their code and message; unknown exceptions become INTERNAL with a
generic message (details stay in the log, keyed by request id, never sent to clients).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import grpc

from wolf_service.errors import status_code_of
from wolf_service.wrapping import StreamCall, UnaryCall, WrappingInterceptor

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


class ErrorMappingInterceptor(WrappingInterceptor):
    """Map exceptions raised by handlers to gRPC status codes, for unary and streaming RPCs."""

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        try:
            return call(request, context)
        except Exception as exc:
            if _is_abort(exc, context):
                raise
            _abort_for(exc, method, request, context)

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        try:
            yield from call(request, context)
        except Exception as exc:
            if _is_abort(exc, context):
                raise
            _abort_for(exc, method, request, context)
