"""What a client needs to run the tool loop (:mod:`odin_client.tools.loop`): its options from the settings (the
log of confirmed calls among them), the audit record of each decision, and the ``confirm`` callback's type.

``confirm`` is the caller's say on tools marked ``confirm`` (called with the call, returns a bool; none
given means every such call is declined). Each decision is appended to ``audit`` when one is given.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odin_client.settings import OdinSettings
from odin_client.tools.confirmations import SHARED_LOG, IdempotencyLog
from odin_client.tools.idempotency_store import SqliteIdempotencyLog
from odin_client.tools.loop import AuditCall, ToolLoopOptions, audit_details
from odin_client.types.results import ToolCallRequest
from wolf_service.audit_log import AuditLog

Confirm = Callable[[ToolCallRequest], bool]


def record_decision(audit: AuditLog | None, actor: str, call: AuditCall) -> None:
    """Append one decision of the loop to the audit log (when there is one)."""
    if audit is not None:
        record = call.record
        audit.record(actor=actor, action="odin.tool_call", target=f"tool={record.name[:64]}",
                     outcome=record.outcome, user=call.user[:128], **audit_details(record))


def audit_log(path: Any) -> AuditLog | None:
    """The tool audit log of a client's settings (``tool_audit_log``), or None when off."""
    return AuditLog(path) if path is not None else None


RUN_TOOLS_DOC = """Answer ``question`` with Geri, running the tools of ``registry`` the model asks for.

        A call runs only when the tool exists, its arguments validate against its schema, the registry's
        caller holds the tool's scopes and, for a tool marked ``confirm``, ``confirm(call)`` said yes (the
        asyncio client also awaits a coroutine function's answer, and awaits coroutine handlers).
        Other calls are answered to the model with the reason. After ``tool_max_steps`` rounds of calls the
        model must answer. Every decision goes to ``tool_audit_log`` (on by default) under ``actor``, with
        the user (``user_id``, else the settings' ``user_id``).
        With ``defer_confirmation=True`` a call needing confirmation ends the turn instead of asking
        ``confirm``: the result has ``stopped == "requires_confirmation"`` and ``pending`` (what would run,
        with its arguments); call again with ``resume=result.pending`` and ``confirmed=(call ids,)`` in the
        same ``session_id`` to run them, each once per idempotency key (docs/answers.md, Tools).
        See docs/answers.md (Tools).

        Args:
            first_tool_choice: "auto" (default) or "required" to make the model call a tool first.
            options: ``tenant_id``, ``model``, ``system_prompt``, ``max_tokens``, ``session_id``, ``owner_id``,
                ``user_id``, ``defer_confirmation``, ``resume``, ``confirmed``.
        """


def loop_options(settings: OdinSettings, *, max_steps: int | None, first_tool_choice: str,
                 **options: Any) -> ToolLoopOptions:
    """The loop's options from a client's settings and a call's keyword arguments."""
    options.setdefault("user_id", settings.user_id or "")
    options.setdefault("idempotency", idempotency_log(settings))
    return ToolLoopOptions(max_steps=max_steps or settings.tool_max_steps, first_tool_choice=first_tool_choice,
                           **options)


_LOGS: dict[tuple[Path | None, bytes], IdempotencyLog] = {}
_LOGS_LOCK = threading.Lock()


def idempotency_log(settings: OdinSettings) -> IdempotencyLog:
    """The log of confirmed calls for ``settings``: this process's (``SHARED_LOG``) unless a secret or a
    shared file is set; one per (file, secret) in a process."""
    if settings.tool_idempotency_secret is None:
        return SHARED_LOG
    secret = settings.tool_idempotency_secret.get_secret_value().encode("utf-8")
    where = settings.tool_idempotency_log
    with _LOGS_LOCK:
        log = _LOGS.get((where, secret))
        if log is None:
            log = _LOGS[(where, secret)] = (SqliteIdempotencyLog(where, secret) if where is not None
                                             else IdempotencyLog(secret=secret))
        return log
