"""Sans-IO flows, driven by the blocking and by the asyncio client alike.

A flow is a generator that yields the calls it needs (small frozen dataclasses) and receives their
results; it returns its result. ``drive`` runs one with blocking calls, ``drive_async`` with awaited
ones, so both clients run the same steps in the same order. A call whose ``optional`` attribute is
true and that fails with an :class:`~odin_client.types.errors.OdinError` sends back None instead of failing
the whole flow (e.g. rewriting a follow-up: the question is then searched as asked).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from odin_client.types.errors import OdinError

log = logging.getLogger("odin_client.protocol.flows")
T = TypeVar("T")
C = TypeVar("C")


def _optional_failed(call: object, exc: OdinError) -> None:
    if not getattr(call, "optional", False):
        raise exc
    log.warning("optional call %s failed, going on without it: %s", type(call).__name__, exc)


def drive(flow: Generator[C, Any, T], perform: Callable[[C], Any]) -> T:
    """Run a flow with blocking calls."""
    try:
        call = next(flow)
        while True:
            try:
                result = perform(call)
            except OdinError as exc:
                _optional_failed(call, exc)
                result = None
            call = flow.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def drive_async(flow: Generator[C, Any, T], perform: Callable[[C], Awaitable[Any]]) -> T:
    """Run a flow with awaited calls."""
    try:
        call = next(flow)
        while True:
            try:
                result = await perform(call)
            except OdinError as exc:
                _optional_failed(call, exc)
                result = None
            call = flow.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
