"""Domain exceptions that carry their gRPC status code.

Services raise these (or any exception with a ``grpc_code`` attribute) and the
``ErrorMappingInterceptor`` in :mod:`wolf_service.error_mapping` turns them into a
status in exactly one place. Anything else becomes INTERNAL and is logged.
"""

from __future__ import annotations

import grpc


class ServiceError(Exception):
    """Base class of errors a client is meant to see. The message is sent as details."""

    grpc_code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidArgument(ServiceError):
    """The request is malformed; retrying it unchanged will fail again."""

    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ServiceError):
    """The named document, model or resource does not exist."""

    grpc_code = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(ServiceError):
    """The system is not in a state to serve the request (e.g. a model is not pulled)."""

    grpc_code = grpc.StatusCode.FAILED_PRECONDITION


class Unavailable(ServiceError):
    """A dependency is unreachable; the call may succeed if retried later."""

    grpc_code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(ServiceError):
    """A dependency did not answer in time."""

    grpc_code = grpc.StatusCode.DEADLINE_EXCEEDED


class Cancelled(ServiceError):
    """The client went away or cancelled; work was stopped."""

    grpc_code = grpc.StatusCode.CANCELLED


class ResourceExhausted(ServiceError):
    """A limit (queue, size, rate) was hit."""

    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unauthenticated(ServiceError):
    """No valid credentials were presented."""

    grpc_code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    """The credentials do not allow this request (e.g. another tenant)."""

    grpc_code = grpc.StatusCode.PERMISSION_DENIED


def status_code_of(exc: BaseException) -> grpc.StatusCode:
    """Return the gRPC status code an exception maps to (INTERNAL if it declares none)."""
    code = getattr(exc, "grpc_code", None)
    return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.INTERNAL
