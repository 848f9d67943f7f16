"""Running a tool's handler for the loop: bounded in time, errors turned into a result the model can read.

A handler may be a plain function (run in a worker thread so its time limit can be enforced) or, with
the asyncio client, a coroutine function. A plain function that overruns its limit is left running, not
killed (Python cannot stop a thread; a blocking handler should carry its own timeouts): the outcome is
"unfinished", says the tool may still take effect, and can be asked later how the run ended (the loop does,
when it ends). A coroutine that overruns is cancelled, which may also leave part of its work done; the model
is told so. Exceptions are logged here with their message; the model (and so the user) only learns the
exception's type.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from odin_client.tools.loop import ToolOutcome
from odin_client.tools.registry import ToolRegistry, as_text
from odin_client.types.results import ToolCallRequest

log = logging.getLogger("odin_client.tools")
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="odin-tool")


def _failed(call: ToolCallRequest, exc: BaseException) -> ToolOutcome:
    log.warning("tool %s (call %s) failed: %s: %s", call.name, call.id[:64], type(exc).__name__, exc)
    return ToolOutcome("error", json.dumps({"error": f"the tool failed ({type(exc).__name__})"}))


def _unfinished(call: ToolCallRequest, timeout_s: float, future: Future[Any] | asyncio.Future[Any]) -> ToolOutcome:
    log.warning("tool %s (call %s) still running after %g s; left to finish", call.name, call.id[:64], timeout_s)
    return ToolOutcome("unfinished", json.dumps({"error": (
        f"the tool did not finish within {timeout_s:g} s and is still running: it may yet complete and take "
        "effect, so do not say it did nothing and do not run it again without asking")}),
        later=lambda: _ended(call, future) if future.done() else None)


def _ended(call: ToolCallRequest, future: Future[Any] | asyncio.Future[Any]) -> ToolOutcome:
    """The outcome of a run that has ended (returned or raised)."""
    if future.cancelled():
        return ToolOutcome("error", json.dumps({"error": "the tool was cancelled"}))
    exc = future.exception()
    return _failed(call, exc) if exc is not None else ToolOutcome("ok", as_text(future.result()))


def _arguments(handler: Any, call: ToolCallRequest, caller: Mapping[str, str]) -> dict[str, Any]:
    """The model's arguments, plus ``tenant_id`` / ``user_id`` for a handler that declares them (the caller's,
    never the model's: a model cannot name another user)."""
    try:
        declared = inspect.signature(handler).parameters
    except (TypeError, ValueError):
        declared = {}  # type: ignore[assignment]
    return {**call.arguments, **{k: v for k, v in caller.items() if k in declared}}


def run_call(registry: ToolRegistry, call: ToolCallRequest, timeout_s: float,
             caller: Mapping[str, str] | None = None) -> ToolOutcome:
    """Run an allowed call with the blocking client."""
    handler = registry.tool(call.name).handler
    if inspect.iscoroutinefunction(handler):
        return ToolOutcome("error", json.dumps({"error": "this tool is async: run it with AsyncOdinClient"}))
    future = _POOL.submit(handler, **_arguments(handler, call, caller or {}))
    wait([future], timeout=timeout_s)
    # Looked at once, after the wait: a run that ended at the limit counts as ended, whatever the timer said.
    return _ended(call, future) if future.done() else _unfinished(call, timeout_s, future)


async def run_call_async(registry: ToolRegistry, call: ToolCallRequest, timeout_s: float,
                         caller: Mapping[str, str] | None = None) -> ToolOutcome:
    """Run an allowed call with the asyncio client (coroutine handlers awaited, others in a thread)."""
    handler = registry.tool(call.name).handler
    arguments = _arguments(handler, call, caller or {})
    if not inspect.iscoroutinefunction(handler):
        # A thread cannot be cancelled: wait without cancelling it, and leave it running past the limit.
        thread_run = asyncio.get_running_loop().run_in_executor(_POOL, lambda: handler(**arguments))
        await asyncio.wait([thread_run], timeout=timeout_s)
        return _ended(call, thread_run) if thread_run.done() else _unfinished(call, timeout_s, thread_run)
    try:
        return ToolOutcome("ok", as_text(await asyncio.wait_for(handler(**arguments), timeout_s)))
    except TimeoutError:
        log.warning("tool %s (call %s) overran %g s; cancelled", call.name, call.id[:64], timeout_s)
        return ToolOutcome("timeout", json.dumps({"error": (
            f"the tool did not finish within {timeout_s:g} s and was cancelled; part of its work may have "
            "taken effect")}))
    except Exception as exc:  # noqa: BLE001 - any handler error becomes the tool's result
        return _failed(call, exc)
