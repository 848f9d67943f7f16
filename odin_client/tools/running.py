"""Running a tool's handler for the loop: bounded in time, errors turned into a result the model can read.

A handler may be a plain function (run in a worker thread so its time limit can be enforced) or, with
the asyncio client, a coroutine function. A handler that overruns its limit is abandoned, not killed:
Python cannot stop a thread, so a blocking handler should carry its own timeouts. Exceptions are logged
here with their message; the model (and so the user) only learns the exception's type.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from odin_client.results import ToolCallRequest
from odin_client.tools.loop import ToolOutcome
from odin_client.tools.registry import ToolRegistry, as_text

log = logging.getLogger("odin_client.tools")
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="odin-tool")


def _failed(call: ToolCallRequest, exc: BaseException) -> ToolOutcome:
    log.warning("tool %s (call %s) failed: %s: %s", call.name, call.id[:64], type(exc).__name__, exc)
    return ToolOutcome("error", json.dumps({"error": f"the tool failed ({type(exc).__name__})"}))


def _late(timeout_s: float) -> ToolOutcome:
    return ToolOutcome("timeout", json.dumps({"error": f"the tool did not finish within {timeout_s:g} s"}))


def run_call(registry: ToolRegistry, call: ToolCallRequest, timeout_s: float) -> ToolOutcome:
    """Run an allowed call with the blocking client."""
    handler = registry.tool(call.name).handler
    if inspect.iscoroutinefunction(handler):
        return ToolOutcome("error", json.dumps({"error": "this tool is async: run it with AsyncOdinClient"}))
    future = _POOL.submit(handler, **call.arguments)
    try:
        return ToolOutcome("ok", as_text(future.result(timeout=timeout_s)))
    except FutureTimeout:
        log.warning("tool %s (call %s) overran %g s; abandoned", call.name, call.id[:64], timeout_s)
        return _late(timeout_s)
    except Exception as exc:  # noqa: BLE001 - any handler error becomes the tool's result
        return _failed(call, exc)


async def run_call_async(registry: ToolRegistry, call: ToolCallRequest, timeout_s: float) -> ToolOutcome:
    """Run an allowed call with the asyncio client (coroutine handlers awaited, others in a thread)."""
    handler = registry.tool(call.name).handler
    try:
        if inspect.iscoroutinefunction(handler):
            result = await asyncio.wait_for(handler(**call.arguments), timeout_s)
        else:
            result = await asyncio.wait_for(asyncio.to_thread(handler, **call.arguments), timeout_s)
        return ToolOutcome("ok", as_text(result))
    except TimeoutError:
        log.warning("tool %s (call %s) overran %g s; cancelled", call.name, call.id[:64], timeout_s)
        return _late(timeout_s)
    except Exception as exc:  # noqa: BLE001 - any handler error becomes the tool's result
        return _failed(call, exc)
