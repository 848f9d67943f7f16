"""The asyncio connection: grpc.aio channels, the retry loops that wait with ``await sleep``, the IndexDocuments
stream, and what a CancelledError out of grpc.aio means.

The I/O half of :class:`~odin_client.client.AsyncOdinClient`. Its twin is
:mod:`odin_client.client.blocking_connection`: the same :class:`~odin_client.protocol.channels.ChannelPool` and
:class:`~odin_client.protocol.attempts.Attempts`, other waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, Protocol, Self, TypeAlias, TypeVar

import grpc
from wolf.v1 import freki_pb2

from odin_client.client.connection_core import ConnectionCore
from odin_client.protocol.attempts import Attempts, RetryListener, policy_from
from odin_client.protocol.channels import ChannelPool, call_metadata
from odin_client.protocol.index_stream import IndexBatch, IndexStream, StreamMismatch, built, unusable
from odin_client.protocol.retry import attempt_timeout
from odin_client.protocol.specs import CallSpec
from odin_client.settings import OdinSettings
from odin_client.tools.driving import Confirm, audit_log
from odin_client.tools.loop import ToolOutcome
from odin_client.tools.registry import ToolRegistry
from odin_client.tools.running import run_call_async
from odin_client.types.errors import ClientClosed, raise_from_rpc_error
from odin_client.types.results import ToolCallRequest

T = TypeVar("T")
# What a server-streaming call hands its reader (a generator: closing it cancels the call).
Stream: TypeAlias = AsyncGenerator[T, None]


class AsyncClock(Protocol):
    """Time source and non-blocking sleeper (tests inject a fake)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        ...


class LoopClock:
    """The real clock."""

    def monotonic(self) -> float:
        """Seconds on the process's monotonic clock."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)


def _open_channel(target: str, credentials: grpc.ChannelCredentials | None,
                  options: list[tuple[str, Any]]) -> grpc.aio.Channel:
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=options)
    return grpc.aio.secure_channel(target, credentials, options=options)


class AsyncConnection(ConnectionCore[grpc.aio.Channel]):
    """Channels and retries shared by the calls of :class:`~odin_client.client.AsyncOdinClient`."""

    def __init__(self, settings: OdinSettings | None = None, *, clock: AsyncClock | None = None,
                 rng: random.Random | None = None, on_retry: RetryListener | None = None) -> None:
        """Create a client; channels open on first use (inside the running event loop); arguments as in
        :class:`~odin_client.client.OdinClient`."""
        self.settings = settings or OdinSettings()
        self.channels: ChannelPool[grpc.aio.Channel] = ChannelPool(self.settings, _open_channel)
        self.policy = policy_from(self.settings)
        self.clock: AsyncClock = clock or LoopClock()
        self.rng = rng or random.Random()
        self.on_retry = on_retry
        self._metadata = call_metadata(self.settings)
        self._tool_audit = audit_log(self.settings.tool_audit_log)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close all channels. Further calls raise :class:`~odin_client.types.errors.ClientClosed`."""
        for channel in self.channels.retire():
            await channel.close()

    @property
    def _closed(self) -> bool:
        return self.channels.closed

    @contextlib.contextmanager
    def _closing(self) -> Iterator[None]:
        """What a CancelledError out of a grpc.aio call means: ``close()`` cancelled the call (grpc.aio reports a
        locally cancelled call as CancelledError even in a task nobody cancelled) -> ClientClosed; else the task
        itself is being cancelled, and the CancelledError goes on as it is."""
        try:
            yield
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.channels.closed and task is not None and task.cancelling() == 0:
                raise ClientClosed("the Odin client was closed while the call was running") from None
            raise

    async def _unary(self, spec: CallSpec[Any]) -> tuple[Any, int]:
        """Run a unary call until it succeeds, fails for good, or the budget is spent; the response and attempts."""
        method = self._stub_method(spec)
        tries = self._attempts(spec)
        with self._closing():
            while True:
                remaining = tries.start()
                try:
                    timeout = attempt_timeout(remaining, self.settings.attempt_timeout_s)
                    return await method(spec.request, timeout=timeout, metadata=self._metadata), tries.count
                except grpc.RpcError as exc:
                    delay = tries.failed(exc)
                await self.clock.sleep(delay)

    async def _server_stream(self, spec: CallSpec[Any], tries: Attempts) -> AsyncGenerator[Any, None]:
        """The messages of a server stream, retrying the call only until its first message arrived; a consumer
        that stops early (or a break) cancels the call."""
        method = self._stub_method(spec)
        with self._closing():
            while True:
                remaining = tries.start()
                # The whole remaining budget: a per-attempt cap would cut long generations short.
                call = method(spec.request, timeout=remaining, metadata=self._metadata)
                try:
                    message = await call.read()
                    break
                except grpc.RpcError as exc:
                    delay = tries.failed(exc)
                await self.clock.sleep(delay)
            received = 0
            try:
                while message is not grpc.aio.EOF:
                    received += 1
                    yield message
                    message = await call.read()
            except grpc.RpcError as exc:
                raise_from_rpc_error(exc, service=tries.service, method=tries.method, attempts=tries.count,
                                     after_messages=received)
            finally:
                call.cancel()

    async def _offload(self, function: Callable[..., T], *args: Any) -> T:
        """Run blocking work (reading files, walking folders) in a worker thread, off the event loop."""
        return await asyncio.to_thread(function, *args)

    async def _confirmed(self, confirm: Confirm | None, call: ToolCallRequest) -> bool:
        """The caller's say on a tool call marked ``confirm`` (none given: declined); a coroutine function's
        answer is awaited."""
        if confirm is None:
            return False
        said = confirm(call)
        return bool(await said) if isinstance(said, Awaitable) else bool(said)

    async def _run_tool(self, registry: ToolRegistry, call: ToolCallRequest,
                        caller: Mapping[str, str]) -> ToolOutcome:
        """Run an allowed tool call within ``tool_timeout_s``: a coroutine handler awaited, others in a thread;
        ``caller`` (tenant_id, user_id) goes to a handler that declares those parameters."""
        return await run_call_async(registry, call, self.settings.tool_timeout_s, caller)

    async def _index_stream(self, batch: IndexBatch) -> None:
        """Send the batch over one IndexDocuments stream, settling each outcome (see
        :mod:`~odin_client.protocol.index_stream`); returns early, leaving documents missing, when it is unusable.
        Files are read in a worker thread."""
        stream = IndexStream(batch.docs)

        async def requests() -> AsyncIterator[freki_pb2.IndexDocumentRequest]:
            for i, doc in enumerate(batch.docs):
                request = stream.admit(i, await asyncio.to_thread(built, batch.make_request, doc))
                if request is not None:
                    yield request

        responses = self._freki().IndexDocuments(requests(), timeout=batch.stream_timeout(
            self.settings.index_deadline_s), metadata=self._metadata)
        with self._closing():
            try:
                async for result in responses:
                    batch.settle_all(stream.received(result))
                batch.settle_all(stream.ended())
            except grpc.RpcError as exc:
                stream.broke(exc)
            except StreamMismatch as exc:
                unusable(str(exc))
            finally:
                responses.cancel()
