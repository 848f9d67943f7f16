# Generated from odin_client/client/_async/calls.py by scripts/unasync_client.py: edit the source, not this.
"""Running a :class:`~odin_client.protocol.specs.CallSpec` (a unary call, or a server stream, converted) and
driving a sans-IO flow (:mod:`odin_client.protocol.flows`).

The source of both clients (``_sync/calls.py`` is generated from it): the connection below does the I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from odin_client.client.blocking_connection import Connection, Stream
from odin_client.protocol.flows import optional_failed
from odin_client.protocol.specs import CallSpec, Took, incomplete
from odin_client.types.errors import OdinError

R = TypeVar("R")
C = TypeVar("C")


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


class Calls(Connection):
    """Unary and server-streaming calls from their specs, with their attempts and elapsed time."""

    def _call(self, spec: CallSpec[R]) -> R:
        """Run a unary spec with retries; its converted result."""
        started = time.perf_counter()
        resp, attempts = self._unary(spec)
        return spec.convert(resp, Took(attempts, _ms_since(started)))

    def _stream_call(self, spec: CallSpec[Any]) -> Stream[Any]:
        """Run a server-streaming spec (retried until its first message); each message converted (None skipped).

        Raises:
            StreamInterrupted: the stream ended without the message that completes it (``spec.last``).
        """
        started = time.perf_counter()
        tries = self._attempts(spec)
        messages = self._server_stream(spec, tries)
        received = 0
        try:
            for message in messages:
                received += 1
                item = spec.convert(message, Took(tries.count, _ms_since(started)))
                if item is not None:
                    yield item
                if spec.last is not None and spec.last(message):
                    return
        finally:
            messages.close()  # a consumer that stops early cancels the call now
        if spec.last is not None:
            raise incomplete(spec, received)

    def _drive(self, flow: Generator[C, Any, R], perform: Callable[[C], Any]) -> R:
        """Run a sans-IO flow: perform each call it yields and send the result back; the flow's result."""
        try:
            call = next(flow)
            while True:
                try:
                    result = perform(call)
                except OdinError as exc:
                    optional_failed(call, exc)
                    result = None
                call = flow.send(result)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
