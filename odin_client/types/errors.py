"""The Odin client's exception tree and the one place a ``grpc.RpcError`` becomes one of them.

Callers catch :class:`OdinError` (or a subclass) and never see grpc types. Every error names the
service that failed, the gRPC status code, the server's details and how many attempts were made,
so "Freki unavailable after 7 attempts" can be told apart from "Geri rejected the prompt"; and, from the
server's rich status details, the error's stable ``reason`` (``LIMIT_EXCEEDED``, ``INVALID_ARGUMENT``), what
to do about it (``hint``), the ``field`` a refused request got wrong and ``error_metadata`` (``setting``,
``limit``, ``request_id``).
"""

from __future__ import annotations

from typing import Any, NoReturn

import grpc

from wolf_service.rate_limits import retry_after_seconds
from wolf_service.status_details import details_in_metadata


class OdinError(Exception):
    """Base class of every error the Odin client raises.

    Attributes:
        service: "freki" or "geri" (or "odin" for client-side errors).
        code: gRPC status code, when the error came from a call.
        details: The server's (or transport's) error message.
        attempts: How many attempts were made before giving up.
        reason: The server's stable error type (ErrorInfo.reason), "" when it sent none.
        hint: What a caller can do about it (the server's LocalizedMessage), "" when it sent none.
        field: The request field a refused request got wrong (BadRequest), "" when not known.
        error_metadata: ErrorInfo.metadata: ``request_id``, and ``setting`` and ``limit`` for a limit.
    """

    reason: str = ""
    hint: str = ""
    field: str = ""
    error_metadata: dict[str, str] = {}  # noqa: RUF012 (replaced per instance, never mutated)

    def __init__(
        self,
        message: str,
        *,
        service: str = "odin",
        code: grpc.StatusCode | None = None,
        details: str = "",
        attempts: int = 0,
    ) -> None:
        super().__init__(message)
        self.service = service
        self.code = code
        self.details = details
        self.attempts = attempts


class ServiceUnavailable(OdinError):
    """The service could not be reached (or dropped the connection), even after retrying."""


class StreamInterrupted(ServiceUnavailable):
    """A stream broke after some messages arrived; the partial result was not returned as complete."""


class DeadlineExceeded(OdinError):
    """The call's overall deadline passed before the service answered."""


class InvalidRequest(OdinError):
    """The service rejected the request as malformed; sending it again unchanged will fail again."""


class NotFound(OdinError):
    """The named document or model does not exist."""


class PermissionDenied(OdinError):
    """Missing or wrong credentials (API key, tenant)."""


class ClientClosed(OdinError):
    """The client was closed; create a new one."""


class RateLimited(OdinError):
    """A tenant's or API key's rate or concurrency limit refused the call (RESOURCE_EXHAUSTED).

    Attributes:
        retry_after: Seconds after which a retry can succeed, as the server said.
    """

    def __init__(self, message: str, *, retry_after: float, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


_CLASS_BY_CODE: dict[grpc.StatusCode, type[OdinError]] = {
    grpc.StatusCode.UNAVAILABLE: ServiceUnavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.OUT_OF_RANGE: InvalidRequest,
    grpc.StatusCode.FAILED_PRECONDITION: InvalidRequest,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED: PermissionDenied,
}

SERVICE_TITLES = {"freki": "Freki (retrieval)", "geri": "Geri (generation)", "odin": "Odin client"}


def status_of(exc: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """Return (code, details) of an RpcError; sync and aio errors both implement ``grpc.Call``."""
    code_fn = getattr(exc, "code", None)
    details_fn = getattr(exc, "details", None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    details = details_fn() if callable(details_fn) else str(exc)
    return (code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN), str(details or "")


def server_retry_after(exc: grpc.RpcError) -> float | None:
    """Seconds a RESOURCE_EXHAUSTED refusal says to wait (its ``retry-after`` trailer, else its RetryInfo);
    None for any other code and for a refusal that names no wait (a size limit: retrying cannot succeed)."""
    trailing: Any = getattr(exc, "trailing_metadata", None)
    if status_of(exc)[0] != grpc.StatusCode.RESOURCE_EXHAUSTED or not callable(trailing):
        return None
    metadata = trailing()
    wait = retry_after_seconds(metadata)
    if wait is None and (info := details_in_metadata(metadata).get("RetryInfo")) is not None:
        wait = info.retry_delay.ToTimedelta().total_seconds()
    return wait if wait is not None and wait >= 0 else None


def from_rpc_error(
    exc: grpc.RpcError, *, service: str, method: str, attempts: int, after_messages: int = 0
) -> OdinError:
    """Build the OdinError for a failed call (see :func:`raise_from_rpc_error`), with the server's rich
    status details (reason, hint, field, metadata) when it sent them."""
    error = _error_for(exc, service=service, method=method, attempts=attempts, after_messages=after_messages)
    trailing: Any = getattr(exc, "trailing_metadata", None)
    found = details_in_metadata(trailing() if callable(trailing) else None)
    if "ErrorInfo" in found:
        error.reason = found["ErrorInfo"].reason
        error.error_metadata = dict(found["ErrorInfo"].metadata)
    if "LocalizedMessage" in found:
        error.hint = found["LocalizedMessage"].message
    if "BadRequest" in found and found["BadRequest"].field_violations:
        error.field = found["BadRequest"].field_violations[0].field
    return error


def _error_for(
    exc: grpc.RpcError, *, service: str, method: str, attempts: int, after_messages: int = 0
) -> OdinError:
    """The OdinError for a failed call, by its status code.

    Args:
        exc: The last RpcError seen.
        service: "freki" or "geri".
        method: RPC name, e.g. "RetrieveContext", for the message.
        attempts: Attempts made, the failing one included.
        after_messages: Stream messages received before the failure; > 0 means a broken stream.
    """
    code, details = status_of(exc)
    title = SERVICE_TITLES.get(service, service)
    wait = server_retry_after(exc)
    if wait is not None:
        return RateLimited(f"{title} {method} refused: {details} (retry after {wait:.2f} s)", retry_after=wait,
                           service=service, code=code, details=details, attempts=attempts)
    if after_messages and code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                                   grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
        message = (f"{title} {method} stream broke after {after_messages} message(s) "
                   f"({code.name}: {details}); the result is incomplete")
        return StreamInterrupted(message, service=service, code=code, details=details, attempts=attempts)
    return from_status(code, details, service=service, method=method, attempts=attempts)


def from_status(code: grpc.StatusCode, details: str, *, service: str, method: str, attempts: int = 1) -> OdinError:
    """The OdinError for a status a call (or one item of a batch) ended with."""
    title = SERVICE_TITLES.get(service, service)
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts > 1 else ""
    cls = _CLASS_BY_CODE.get(code, OdinError)
    message = f"{title} {method} failed{tries}: {code.name}: {details or 'no details'}"
    if cls is ServiceUnavailable:
        message += f" — is the {service} service running and reachable?"
    return cls(message, service=service, code=code, details=details, attempts=attempts)


def raise_from_rpc_error(
    exc: grpc.RpcError, *, service: str, method: str, attempts: int, after_messages: int = 0
) -> NoReturn:
    """The single place an RpcError leaves the client: raise its OdinError, chained ``from exc``."""
    raise from_rpc_error(
        exc, service=service, method=method, attempts=attempts, after_messages=after_messages
    ) from exc
