"""Audit trail of state-changing and data-revealing RPCs, recorded by a server interceptor.

Each service lists the RPCs it audits (index, delete, export, generate…) with an action
name and how to name the target from the request. The interceptor appends one
:class:`~wolf_service.audit_log.AuditLog` line per such call — also for calls that were
refused or failed — with the caller (API-key name, else the peer address), the user (``x-wolf-user``), the tenant
and ids, the status, the duration and a few counts from the response. Never content.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from wolf_service.audit_log import AuditLog, Scalar, identifier
from wolf_service.error_mapping import request_id_of
from wolf_service.identity import logged_user
from wolf_service.wrapping import (
    StreamCall,
    UnaryCall,
    WrappingInterceptor,
    envelope_of,
    final_code,
    observe_stream,
    rpc_name,
)

log = logging.getLogger("wolf_service.auditing")


@dataclass(frozen=True)
class AuditedRpc:
    """How one RPC appears in the audit log.

    Attributes:
        action: Dotted action name, e.g. ``"freki.index_document"``.
        target: Names what the call acts on from the request (ids only).
        details: Counts taken from the response (or a stream's last message).
    """

    action: str
    target: Callable[[Any], str]
    details: Callable[[Any], Mapping[str, Scalar]] | None = None


class AuditInterceptor(WrappingInterceptor):
    """Appends an audit event when an audited RPC finishes, whatever its outcome.

    Args:
        audit: The append-only log.
        audited: RPCs to audit, keyed ``"FrekiService/IndexDocument"``.
        identify: The caller's API-key name, when keys are on.
        default_tenant: Recorded when the request leaves its tenant empty.
        user_id_max_chars: The live ``security.user_id_max_chars`` (a longer user id is recorded as invalid).
    """

    def __init__(
        self,
        audit: AuditLog,
        audited: Mapping[str, AuditedRpc],
        identify: Callable[[grpc.ServicerContext], str | None] | None = None,
        default_tenant: str = "",
        user_id_max_chars: Callable[[], int] = lambda: 128,
    ) -> None:
        self.audit = audit
        self._user_max = user_id_max_chars
        self._audited = dict(audited)
        self._identify = identify
        self._default_tenant = default_tenant

    def applies_to(self, method: str) -> bool:
        return rpc_name(method) in self._audited

    def _record(self, method: str, request: Any, context: grpc.ServicerContext, code: grpc.StatusCode,
                started: float, last: Any, messages: int | None = None) -> None:
        spec = self._audited[rpc_name(method)]
        actor = (self._identify(context) if self._identify else None) or context.peer()
        details: dict[str, Scalar] = {
            "tenant": identifier(str(getattr(envelope_of(request), "tenant_id", "") or self._default_tenant)),
            "user": logged_user(context, self._user_max()),
            "request_id": identifier(request_id_of(request, context)),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        }
        if messages is not None:
            details["messages"] = messages
        try:
            if last is not None and spec.details is not None and code == grpc.StatusCode.OK:
                details.update(spec.details(last))
            self.audit.record(
                actor=actor, action=spec.action, target=identifier(spec.target(request)),
                outcome="ok" if code == grpc.StatusCode.OK else code.name.lower(), **details,
            )
        except Exception:
            # The call itself already ran; losing its audit line must be loud, not silent.
            log.exception("could not write the audit event for %s (request_id=%s)",
                          spec.action, details["request_id"])

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        started = time.perf_counter()
        failed, response = True, None
        try:
            response = call(request, context)
            failed = False
            return response
        finally:
            self._record(method, request, context, final_code(context, failed), started, response)

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        started = time.perf_counter()

        def on_end(code: grpc.StatusCode, sent: int, last: Any) -> None:
            self._record(method, request, context, code, started, last, sent)

        return observe_stream(call, request, context, on_end)
