"""Rich gRPC status details: a stable error type and a recovery hint on every refused call.

Every error a Wolfpack service sends keeps its plain status code and message, and adds a
``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer (what grpcurl, grpc-status and
the Go/Java/Node helpers read) with:

- ``ErrorInfo``: ``reason`` is the stable type of the error (the exception class as UPPER_SNAKE:
  ``LIMIT_EXCEEDED``, ``INVALID_ARGUMENT``, ``UNAUTHENTICATED``); ``domain`` is the gRPC service that
  raised it (``wolf.v1.FrekiService``); ``metadata`` holds ``request_id`` and, when known, the
  ``setting`` behind a limit and the ``limit`` itself.
- ``LocalizedMessage`` (en): what a caller can do about it.
- ``Help``: the operations page that explains it.
- ``RetryInfo`` when a retry can succeed: UNAVAILABLE, and RESOURCE_EXHAUSTED that is a rate or a queue
  (never a size limit: the same request would be refused again).
- ``BadRequest`` with the field named by the message for INVALID_ARGUMENT.

An exception may set ``reason``, ``hint``, ``field``, ``setting``, ``limit`` or ``retry_after`` (seconds)
to say it itself; otherwise they are read from its message, which names fields and settings by house rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NoReturn

import grpc
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

HELP_URL = "docs/operations.md#error-details"
LIMITS_URL = "docs/operations.md#limits"
DEFAULT_RETRY_S = 1.0
_MAX_METADATA = 200

# "request.context.documents[2].content is empty", "options.min_score: ...", "prompt is 9 characters".
_FIELD = re.compile(r"^((?:[A-Za-z_]\w*(?:\[\d+\])?)(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*)(?=:| must | is | has | are )")
# "(setting ingest.max_bytes)", "(answering.max_query_variants; got 4)", "setting rate_limits.tenant.rate"
_SETTING = re.compile(r"setting `?([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)`?(?=[;),\s]|$)"
                      r"|\(([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)+)(?=[;),\s])")
_LIMIT = re.compile(r"(?:the limit is|limit(?: of)?|at most|over the) ([\d,.]+(?:\s?[KMG]i?B|-byte)?)")

_HINTS: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.INVALID_ARGUMENT: "Correct the field the message names and send the request again; the same "
                                      "request is refused the same way.",
    grpc.StatusCode.NOT_FOUND: "Check the id or name (ListDocuments, ListModels list what exists); nothing was "
                               "changed.",
    grpc.StatusCode.ALREADY_EXISTS: "It exists already; read it instead of creating it.",
    grpc.StatusCode.FAILED_PRECONDITION: "The service is not ready for this request; the message says what must "
                                         "change first. Retrying unchanged fails again.",
    grpc.StatusCode.UNAVAILABLE: "A backend or dependency is down or busy: retry after the RetryInfo delay, with "
                                 "exponential backoff.",
    grpc.StatusCode.DEADLINE_EXCEEDED: "Give the call a longer deadline, or send less work in one call.",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "Retry after the RetryInfo delay; sustained, lower the request rate.",
    grpc.StatusCode.UNAUTHENTICATED: "Send metadata 'authorization: Bearer <key>' with a configured API key.",
    grpc.StatusCode.PERMISSION_DENIED: "The credentials may not do this: the message names the scope, tenant or "
                                       "owner that is missing. Use a key that holds it (leave tenant_id empty to "
                                       "act on the key's own tenant).",
    grpc.StatusCode.CANCELLED: "The call was cancelled or the client went away; send it again if still needed.",
    grpc.StatusCode.INTERNAL: "A fault in the service: report the request_id in the metadata to the operator "
                              "(the server log holds the trace).",
}


def reason_of(exc: BaseException | None, code: grpc.StatusCode) -> str:
    """The stable error type: ``exc.reason``, else its class name as UPPER_SNAKE, else the code's name."""
    if exc is None:
        return code.name
    given = getattr(exc, "reason", None)
    if isinstance(given, str) and given:
        return given
    name = type(exc).__name__
    if name == "Exception" or code == grpc.StatusCode.INTERNAL:
        return code.name  # an unknown exception's class is an implementation detail, not a type
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _attr(exc: BaseException | None, name: str) -> str:
    value = getattr(exc, name, None) if exc is not None else None
    return str(value)[:_MAX_METADATA] if isinstance(value, str | int | float) and value != "" else ""


def _retry_after(exc: BaseException | None, code: grpc.StatusCode, setting: str) -> float | None:
    """Seconds after which a retry can succeed; None when a retry cannot (or the code says nothing of it)."""
    given = getattr(exc, "retry_after", None) if exc is not None else None
    if isinstance(given, int | float) and given >= 0:
        return float(given)
    if code == grpc.StatusCode.UNAVAILABLE:
        return DEFAULT_RETRY_S
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and not setting:
        return DEFAULT_RETRY_S  # a queue or a rate; a configured size limit names its setting instead
    return None


def rich_status(code: grpc.StatusCode, message: str, *, domain: str, exc: BaseException | None = None,
                request_id: str = "", reason: str = "", hint: str = "") -> status_pb2.Status:
    """The ``google.rpc.Status`` for an error with ``code`` and ``message`` (unchanged), raised as ``exc``."""
    setting = _attr(exc, "setting") or next((a or b for a, b in _SETTING.findall(message)), "")
    limit = _attr(exc, "limit") or (m.group(1).rstrip(".,") if (m := _LIMIT.search(message)) else "")
    metadata = {"request_id": request_id[:_MAX_METADATA], "setting": setting, "limit": limit}
    info = error_details_pb2.ErrorInfo(reason=reason or reason_of(exc, code), domain=domain,
                                       metadata={k: v for k, v in metadata.items() if v})
    retry = _retry_after(exc, code, setting)
    said = _attr(exc, "hint") or hint or _HINTS.get(code, "")
    if setting and code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT) and retry is None:
        said = (f"{said} The limit is the setting `{setting}`: send less, or have an operator raise it."
                if said else f"The limit is the setting `{setting}`.")
    details: list[Any] = [info, error_details_pb2.LocalizedMessage(locale="en-US", message=said)]
    links = [error_details_pb2.Help.Link(description="Error details and recovery", url=HELP_URL)]
    if setting:
        links.append(error_details_pb2.Help.Link(description=f"The limit {setting}", url=LIMITS_URL))
    details.append(error_details_pb2.Help(links=links))
    if retry is not None:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(int(retry * 1e9))
        details.append(error_details_pb2.RetryInfo(retry_delay=delay))
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        field = _attr(exc, "field") or (m.group(1) if (m := _FIELD.match(message)) else "")
        details.append(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description=message)]))
    status = status_pb2.Status(code=code.value[0], message=message)
    for detail in details:
        status.details.add().Pack(detail)
    return status


def domain_of(method: str) -> str:
    """``/wolf.v1.FrekiService/IndexDocument`` → ``wolf.v1.FrekiService``."""
    return method.lstrip("/").rpartition("/")[0] or "wolf.v1"


def abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str, *, method: str,
          exc: BaseException | None = None, request_id: str = "", reason: str = "",
          trailing: Sequence[tuple[str, str]] = ()) -> NoReturn:
    """End the call with ``code`` and ``message`` and the rich details; ``trailing``: more trailing metadata."""
    status = rpc_status.to_status(rich_status(code, message, domain=domain_of(method), exc=exc,
                                              request_id=request_id, reason=reason))
    context.abort_with_status(_Status(status.code, status.details, (*trailing, *status.trailing_metadata)))
    raise AssertionError("unreachable: abort_with_status raises")  # for type checkers


class _Status(grpc.Status):
    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: Any) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


_DETAIL_TYPES = (error_details_pb2.ErrorInfo, error_details_pb2.LocalizedMessage, error_details_pb2.Help,
                 error_details_pb2.RetryInfo, error_details_pb2.BadRequest)


def details_of(error: grpc.RpcError) -> status_pb2.Status | None:
    """The rich status a failed call carried (None when it carried none or it does not parse)."""
    try:
        return rpc_status.from_call(error)  # type: ignore[arg-type]
    except Exception:  # a trailer that is not a Status, or disagrees with the call's code: no details
        return None


def details_in_metadata(metadata: Any) -> dict[str, Any]:
    """The known details in a failed call's trailing metadata (sync or aio), by type name; {} when none parse."""
    for key, value in metadata or ():
        if key == rpc_status.GRPC_DETAILS_METADATA_KEY and isinstance(value, bytes):
            try:
                return unpacked(status_pb2.Status.FromString(value))
            except Exception:  # a trailer that is not a Status: no details rather than a second error
                return {}
    return {}


def unpacked(status: status_pb2.Status | None) -> dict[str, Any]:
    """The known details of ``status`` by type name (``"ErrorInfo"``, ``"RetryInfo"``, ...)."""
    found: dict[str, Any] = {}
    for detail in status.details if status is not None else ():
        for kind in _DETAIL_TYPES:
            if detail.Is(kind.DESCRIPTOR):
                message = kind()
                detail.Unpack(message)
                found[kind.DESCRIPTOR.name] = message
    return found
