"""Odin's errors (and the gateway's own refusals) as OpenAI-style HTTP errors:
``{"error": {"message", "type", "code"}}`` with a status that says whose fault it was; an error from Freki or
Geri adds what their rich status details said: ``param`` (the field a refused request got wrong), ``reason``
(its stable type) and ``hint`` (what to do)."""

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
    """A refusal by the gateway itself (before any call), with its HTTP status."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error", code: str = "") -> None:
        super().__init__(message)
        self.status, self.kind, self.code = status, kind, code


def body(message: str, kind: str, code: str = "") -> dict[str, dict[str, str | None]]:
    """The OpenAI error body."""
    return {"error": {"message": message, "type": kind, "code": code or None}}


def from_odin(exc: OdinError) -> JSONResponse:
    """An Odin error as an HTTP response (a limit refused by Freki or Geri is 429 with its message; a rate
    or concurrency limit adds ``Retry-After`` in whole seconds)."""
    status, kind = _STATUS.get(exc.code, (502, "upstream_error")) if exc.code else (502, "upstream_error")
    if exc.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "limit" in (exc.details or "") + str(exc):
        status = 413 if "bytes" in (exc.details or "") else 429
    headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if isinstance(exc, RateLimited) else None
    content = body(exc.details or str(exc), kind, exc.code.name.lower() if exc.code else "")
    if exc.reason:
        content["error"].update(param=exc.field or None, reason=exc.reason, hint=exc.hint or None)
    return JSONResponse(content, status, headers=headers)


def from_gateway(exc: GatewayError) -> JSONResponse:
    """A gateway refusal as an HTTP response."""
    return JSONResponse(body(str(exc), exc.kind, exc.code), exc.status)
