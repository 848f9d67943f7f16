"""Driving the tool loop with a client's ``generate``: blocking and asyncio.

``confirm`` is the caller's say on tools marked ``confirm`` (called with the call, returns a bool; none
given means every such call is declined). Each decision is appended to ``audit`` when one is given.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from odin_client.flows import drive, drive_async
from odin_client.results import Generation, ToolCallRequest
from odin_client.settings import OdinSettings
from odin_client.tools.loop import (
    AuditCall,
    ConfirmCall,
    GenerateCall,
    LoopCall,
    RunToolCall,
    ToolLoopOptions,
    ToolLoopResult,
    audit_details,
    tool_loop,
)
from odin_client.tools.registry import ToolRegistry
from odin_client.tools.running import run_call, run_call_async
from wolf_service.audit_log import AuditLog

Confirm = Callable[[ToolCallRequest], bool]


def _audit(audit: AuditLog | None, actor: str, call: AuditCall) -> None:
    if audit is not None:
        record = call.record
        audit.record(actor=actor, action="odin.tool_call", target=f"tool={record.name[:64]}",
                     outcome=record.outcome, user=call.user[:128], **audit_details(record))


def drive_tools(generate: Callable[..., Generation], question: str, registry: ToolRegistry, opts: ToolLoopOptions,
                *, confirm: Confirm | None, timeout_s: float, audit: AuditLog | None,
                actor: str) -> ToolLoopResult:
    """Run the loop with blocking calls."""

    def perform(call: LoopCall) -> Any:
        if isinstance(call, GenerateCall):
            return generate(call.prompt, **call.options)
        if isinstance(call, ConfirmCall):
            return bool(confirm(call.call)) if confirm is not None else False
        if isinstance(call, RunToolCall):
            return run_call(registry, call.call, timeout_s, call.caller)
        return _audit(audit, actor, call)

    return drive(tool_loop(question, registry, opts), perform)


async def drive_tools_async(generate: Callable[..., Awaitable[Generation]], question: str, registry: ToolRegistry,
                            opts: ToolLoopOptions, *, confirm: Confirm | None, timeout_s: float,
                            audit: AuditLog | None, actor: str) -> ToolLoopResult:
    """Run the loop with awaited calls (``confirm`` may be a plain or a coroutine function)."""

    async def perform(call: LoopCall) -> Any:
        if isinstance(call, GenerateCall):
            return await generate(call.prompt, **call.options)
        if isinstance(call, ConfirmCall):
            if confirm is None:
                return False
            said = confirm(call.call)
            return bool(await said) if isinstance(said, Awaitable) else bool(said)
        if isinstance(call, RunToolCall):
            return await run_call_async(registry, call.call, timeout_s, call.caller)
        return _audit(audit, actor, call)

    return await drive_async(tool_loop(question, registry, opts), perform)


def audit_log(path: Any) -> AuditLog | None:
    """The tool audit log of a client's settings (``tool_audit_log``), or None when off."""
    return AuditLog(path) if path is not None else None


RUN_TOOLS_DOC = """Answer ``question`` with Geri, running the tools of ``registry`` the model asks for.

        A call runs only when the tool exists, its arguments validate against its schema, the registry's
        caller holds the tool's scopes and, for a tool marked ``confirm``, ``confirm(call)`` said yes.
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
    return ToolLoopOptions(max_steps=max_steps or settings.tool_max_steps, first_tool_choice=first_tool_choice,
                           **options)
