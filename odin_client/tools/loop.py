"""The tool loop as one sans-IO flow: ask Geri with the tools offered, run the calls it returns (after the
registry's checks and the caller's confirmation), hand the results back, until the model answers.

The flow yields :class:`GenerateCall`, :class:`ConfirmCall`, :class:`RunToolCall` and :class:`AuditCall`
and receives their results; both clients drive it in ``run_tools`` (:mod:`odin_client.client`). It is
bounded: after ``max_steps`` rounds of tool calls the model is asked once more with ``tool_choice="none"``, so it
must answer with what it has.

A tool that overruns its time limit is not stopped (a thread cannot be), so it may still finish and take
effect: the model is told exactly that ("unfinished"), and when the loop ends every such call is looked at
again — one that has finished by then is recorded as "late" with what it returned, so the caller never
reads "it did not run" about a tool that ran.

With ``defer_confirmation`` a call needing confirmation ends the turn instead (``requires_confirmation``) and
the next request resumes it (:mod:`odin_client.tools.confirmations`).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from wolf.v1 import common_pb2

from odin_client.tools.confirmations import (
    SHARED_LOG,
    IdempotencyLog,
    IdempotencyLogUnavailable,
    PendingCall,
    PendingConfirmation,
)
from odin_client.tools.registry import ToolRegistry
from odin_client.types.results import Generation, ToolCallRequest


@dataclass(frozen=True)
class GenerateCall:
    """Generate with these keyword arguments (see ``OdinClient.generate``)."""

    prompt: str
    options: dict[str, Any]


@dataclass(frozen=True)
class ConfirmCall:
    """Ask the caller whether this call of a tool marked ``confirm`` may run (the answer is a bool)."""

    call: ToolCallRequest


@dataclass(frozen=True)
class RunToolCall:
    """Run an allowed call; the driver sends back a :class:`ToolOutcome`. ``caller``: tenant_id and user_id,
    given to a handler that declares parameters of those names."""

    call: ToolCallRequest
    caller: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditCall:
    """Write this record to the audit log, if the client has one (the driver returns nothing)."""

    record: ToolCallRecord
    user: str = ""


@dataclass(frozen=True)
class ToolOutcome:
    """How a run ended: ``ok`` with the result text, ``error`` with a reason, or ``unfinished`` (still
    running at its time limit; ``later()`` gives the outcome once it has ended, None until then)."""

    outcome: str
    content: str
    later: Callable[[], ToolOutcome | None] | None = None


@dataclass(frozen=True)
class ToolCallRecord:
    """One call the model asked for and what became of it.

    ``outcome``: ok, error, unfinished (still running at its time limit and when the loop ended: it may yet
    take effect), late (it finished after its time limit, before the loop ended: it ran, ``result`` is what it
    returned), timeout (a coroutine handler cancelled at its time limit: part of it may have taken effect),
    refused (missing scope), declined (not confirmed), invalid (arguments do not match the
    schema), unknown (no such tool), repeated (the same call again in this loop, or a confirmed call re-sent:
    its earlier result was given back, the tool did not run twice), requires_confirmation (waiting for the
    user: the turn ended, see ``ToolLoopResult.pending``).
    """

    id: str
    name: str
    arguments: dict[str, Any]
    outcome: str
    result: str
    step: int


@dataclass(frozen=True)
class ToolLoopResult:
    """The model's final answer and every call made on the way."""

    text: str
    calls: list[ToolCallRecord]
    steps: int
    stopped: str  # "answered", or "max_steps" when the model was made to answer without more tools
    generation: Generation
    session_id: str = ""
    # stopped == "requires_confirmation": what waits for the user; pass it back as ``resume``.
    pending: PendingConfirmation | None = None

    @property
    def requires_confirmation(self) -> bool:
        """Whether the turn ended waiting for the user to confirm ``pending.calls``."""
        return self.pending is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"text": self.text, "steps": self.steps, "stopped": self.stopped, "session_id": self.session_id,
                "calls": [vars(c) for c in self.calls], "generation": self.generation.to_dict(),
                "requires_confirmation": self.pending.to_dict() if self.pending is not None else None}


@dataclass
class ToolLoopOptions:
    """Per-call options of the loop."""

    max_steps: int
    tenant_id: str | None = None
    model: str = ""
    system_prompt: str = ""
    max_tokens: int | None = None
    session_id: str = ""
    owner_id: str = ""
    first_tool_choice: str = "auto"  # "required" makes the model call a tool on the first turn
    extra: dict[str, Any] = field(default_factory=dict)
    # End the turn at a call needing confirmation (instead of asking ``confirm``); resume it next request
    # with ``resume`` (the result's ``pending``) and the ids of the calls the user ``confirmed``.
    user_id: str = ""  # the end user (x-wolf-user), for handlers that take a user_id parameter
    defer_confirmation: bool = False
    resume: PendingConfirmation | None = None
    confirmed: tuple[str, ...] = ()
    idempotency: IdempotencyLog = SHARED_LOG


LoopCall = GenerateCall | ConfirmCall | RunToolCall | AuditCall


def audit_details(record: ToolCallRecord) -> dict[str, str | int]:
    """What the audit log keeps of a call: names and counts, never the arguments' values or the result."""
    return {"call_id": record.id[:64], "arguments": ",".join(sorted(record.arguments))[:256], "step": record.step}


def _turn(call: ToolCallRequest) -> common_pb2.ToolCall:
    return common_pb2.ToolCall(id=call.id, name=call.name, arguments_json=json.dumps(call.arguments))


def _refusal(reason: str) -> str:
    return json.dumps({"error": reason})


def tool_loop(question: str, registry: ToolRegistry,
              opts: ToolLoopOptions) -> Generator[LoopCall, Any, ToolLoopResult]:
    """The flow (see the module docstring)."""
    definitions = registry.definitions()
    base: dict[str, Any] = {"tenant_id": opts.tenant_id, "model": opts.model, "tools": definitions,
                            "session_id": opts.session_id, "owner_id": opts.owner_id, **opts.extra}
    if opts.system_prompt:
        base["system_prompt"] = opts.system_prompt
    if opts.max_tokens is not None:
        base["max_tokens"] = opts.max_tokens
    # Without a session Geri remembers nothing: every turn so far goes with each request. With one, Geri
    # stores each exchange, so only the turns since the last request are sent.
    history: list[common_pb2.ChatTurn] = list(opts.resume.history) if opts.resume else []
    pending: list[common_pb2.ChatTurn] = []
    prompt = question
    records: list[ToolCallRecord] = []
    running: dict[int, Callable[[], ToolOutcome | None]] = {}  # record index -> its unfinished run
    done: dict[tuple[str, str], str] = {}
    step = 0
    if opts.resume is not None:  # the user's answer to the calls that ended the last turn
        prompt, pending = "", list(opts.resume.results)
        for asked in opts.resume.calls:
            record = yield from _confirmed_call(asked, registry, opts)
            records.append(record)
            pending.append(common_pb2.ChatTurn(role="tool", tool_call_id=asked.id, content=record.result))
    while True:
        step += 1
        last = step > opts.max_steps
        turns = pending if opts.session_id else [*history, *pending]
        choice = "none" if last else (opts.first_tool_choice if step == 1 else "auto")
        generation: Generation = yield GenerateCall(prompt, {**base, "messages": turns, "tool_choice": choice})
        if not opts.session_id:
            if prompt:
                history.append(common_pb2.ChatTurn(role="user", content=prompt))
            history.extend(pending)
        pending = []
        prompt = ""
        if not generation.tool_calls or last:
            yield from _settle(records, running, opts.user_id)
            return ToolLoopResult(text=generation.text, calls=records, steps=step,
                                  stopped="max_steps" if last else "answered", generation=generation,
                                  session_id=opts.session_id)
        assistant = common_pb2.ChatTurn(role="assistant", content=generation.text,
                                        tool_calls=[_turn(c) for c in generation.tool_calls])
        if not opts.session_id:  # with a session, Geri stored the assistant turn itself
            history.append(assistant)
        waiting: list[PendingCall] = []
        for call in generation.tool_calls:
            record, later = yield from _one_call(call, registry, done, step, opts)
            if later is not None:
                running[len(records)] = later
            records.append(record)
            if record.outcome == "requires_confirmation":
                waiting.append(PendingCall(call.id, call.name, dict(call.arguments),
                                           opts.idempotency.key(call, opts.tenant_id or "", opts.session_id)))
            else:
                pending.append(common_pb2.ChatTurn(role="tool", tool_call_id=call.id, content=record.result))
        if waiting:
            yield from _settle(records, running, opts.user_id)
            paused = PendingConfirmation(waiting, pending, [] if opts.session_id else history)
            return ToolLoopResult(text=generation.text, calls=records, steps=step, stopped="requires_confirmation",
                                  generation=generation, session_id=opts.session_id, pending=paused)


def _settle(records: list[ToolCallRecord], running: dict[int, Callable[[], ToolOutcome | None]], user: str = ""
            ) -> Generator[LoopCall, Any, None]:
    """Record (and audit) as "late" each unfinished call that has finished since; the rest stay unfinished."""
    for index, later in running.items():
        ended = later()
        if ended is not None:
            old = records[index]
            records[index] = ToolCallRecord(id=old.id, name=old.name, arguments=old.arguments,
                                            outcome="late" if ended.outcome == "ok" else ended.outcome,
                                            result=ended.content, step=old.step)
            yield AuditCall(records[index], user)


def _confirmed_call(waiting: PendingCall, registry: ToolRegistry, opts: ToolLoopOptions
                    ) -> Generator[LoopCall, Any, ToolCallRecord]:
    """Run (once per idempotency key) or decline a call the last turn left waiting; audit it."""
    call = waiting.request()
    decision = registry.decide(call)  # checked again: scopes or the tool may have changed since
    outcome, result = decision.outcome, _refusal(decision.reason)
    if not hmac.compare_digest(waiting.idempotency_key, opts.idempotency.key(call, opts.tenant_id or "",
                                                                           opts.session_id)):
        outcome, result = "invalid", _refusal(
            "the confirmed call does not match its idempotency key: its arguments were changed, or the process "
            "that made it signs with another tool_idempotency_secret (every process must share one)")
    elif waiting.id not in opts.confirmed:
        outcome, result = "declined", _refusal("the user did not allow this call")
    elif outcome in ("ok", "needs_confirmation"):
        try:
            earlier = opts.idempotency.claim(waiting.idempotency_key)
        except IdempotencyLogUnavailable as exc:  # not claimed, so not run ("once" holds); confirmed again later
            outcome, result = "error", _refusal(f"{exc}; the call was not run")
        else:
            if earlier is not None:
                outcome, result = "repeated", earlier
            else:
                ran: ToolOutcome = yield RunToolCall(call, _caller(opts))
                outcome, result = ran.outcome, ran.content
                opts.idempotency.finish(waiting.idempotency_key, result)
    record = ToolCallRecord(id=call.id, name=call.name, arguments=call.arguments, outcome=outcome, result=result,
                            step=0)
    yield AuditCall(record, opts.user_id)
    return record


def _caller(opts: ToolLoopOptions) -> dict[str, str]:
    return {"tenant_id": opts.tenant_id or "", "user_id": opts.user_id}


def _one_call(call: ToolCallRequest, registry: ToolRegistry, done: dict[tuple[str, str], str], step: int,
              opts: ToolLoopOptions,
              ) -> Generator[LoopCall, Any, tuple[ToolCallRecord, Callable[[], ToolOutcome | None] | None]]:
    """Decide, confirm, run (or refuse) one call; audit it; its record (whose ``result`` the model sees) and,
    for a run still going at its time limit, how to learn its outcome later."""
    later = None
    key = (call.name, json.dumps(call.arguments, sort_keys=True))
    decision = registry.decide(call)
    outcome, result = decision.outcome, _refusal(decision.reason)
    if key in done and outcome in ("ok", "needs_confirmation"):
        outcome, result = "repeated", done[key]
    elif outcome == "needs_confirmation" and opts.defer_confirmation:
        outcome, result = "requires_confirmation", ""
    elif outcome == "needs_confirmation":
        confirmed: bool = yield ConfirmCall(call)
        outcome = "ok" if confirmed else "declined"
        if not confirmed:
            result = _refusal("the user did not allow this call")
    if outcome == "ok":
        ran: ToolOutcome = yield RunToolCall(call, _caller(opts))
        outcome, result, later = ran.outcome, ran.content, ran.later
        if outcome == "ok":
            done[key] = result
    record = ToolCallRecord(id=call.id, name=call.name, arguments=call.arguments, outcome=outcome, result=result,
                            step=step)
    yield AuditCall(record, opts.user_id)
    return record, later
