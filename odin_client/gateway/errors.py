"""Odin's errors (and the gateway's own refusals) as OpenAI-style HTTP errors:
``{"error": {"message", "type", "param", "code"}}`` with a status that says whose fault it was and a stable
``code`` a program can switch on (the table in docs/operations.md, Gateway errors):

- a refusal by the gateway itself carries its own code (``invalid_user``, ``body_too_large``, ``invalid_api_key``…)
  and the ``param`` it is about;
- an error from Freki or Geri carries their rich status details: ``code`` is ErrorInfo's ``reason`` in lower case
  (``limit_exceeded``, ``not_found``, ``rate_limited``), also given as it came in ``reason``, with ``param`` (the
  field a refused request got wrong) and ``hint`` (what to do); without details, the gRPC status name.
"""

from __future__ import annotations

import math

import grpc
from fastapi.responses import JSONResponse

from odin_client.types.errors import OdinError, RateLimited

_STATUS: dict[grpc.StatusCode, tuple[int, str]] = {
    grpc.StatusCode.INVALID_ARGUMENT: (400, "invalid_request_error"),
    grpc.StatusCode.OUT_OF_RANGE: (400, "invalid_request_error"),
    grpc.StatusCode.FAILED_PRECONDITION: (422, "invalid_request_error"),
    grpc.StatusCode.NOT_FOUND: (404, "not_found_error"),
    grpc.StatusCode.ALREADY_EXISTS: (409, "invalid_request_error"),
    grpc.StatusCode.UNAUTHENTICATED: (401, "authentication_error"),
    grpc.StatusCode.PERMISSION_DENIED: (403, "permission_error"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (429, "rate_limit_error"),
    grpc.StatusCode.UNAVAILABLE: (503, "service_unavailable"),
    grpc.StatusCode.DEADLINE_EXCEEDED: (504, "timeout"),
    grpc.StatusCode.CANCELLED: (499, "cancelled"),
}


class GatewayError(Exception):
    """A refusal by the gateway itself (before any call): its HTTP status, OpenAI ``type``, stable ``code`` and
    the ``param`` (body field or header) it is about, when there is one."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", *, code: str,
                 param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.code, self.param = status, kind, code, param


def body(message: str, kind: str, code: str, param: str | None = None) -> dict[str, dict[str, str | None]]:
    """The OpenAI error body."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def from_odin(exc: OdinError) -> JSONResponse:
    """An Odin error as an HTTP response (a limit refused by Freki or Geri is 429 with its message; a rate
    or concurrency limit adds ``Retry-After`` in whole seconds)."""
    status, kind = _STATUS.get(exc.code, (502, "upstream_error")) if exc.code else (502, "upstream_error")
    if exc.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "limit" in (exc.details or "") + str(exc):
        status = 413 if "bytes" in (exc.details or "") else 429
    headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if isinstance(exc, RateLimited) else None
    return JSONResponse(odin_body(exc, kind), status, headers=headers)


def odin_body(exc: OdinError, kind: str = "upstream_error") -> dict[str, dict[str, str | None]]:
    """The OpenAI error body of an Odin error: ``code`` from the server's ErrorInfo reason when it sent one."""
    code = exc.reason.lower() if exc.reason else exc.code.name.lower() if exc.code else "upstream_error"
    content = body(exc.details or str(exc), kind, code, exc.field or None)
    if exc.reason:
        content["error"].update(reason=exc.reason, hint=exc.hint or None)
    return content


def from_gateway(exc: GatewayError) -> JSONResponse:
    """A gateway refusal as an HTTP response."""
    return JSONResponse(body(str(exc), exc.kind, exc.code, exc.param), exc.status)
