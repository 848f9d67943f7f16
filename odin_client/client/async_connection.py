"""What every asyncio Odin call needs: settings, grpc.aio channels, and the retrying unary and stream runners.

The asyncio twin of :mod:`odin_client.client.blocking_connection` + :mod:`odin_client.protocol.attempts`: the same
:class:`~odin_client.protocol.attempts.Attempts` decide deadlines and retries; only the waiting (``await clock.sleep``)
and the channels (``grpc.aio``) differ.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, Self, TypeVar

import grpc
from wolf.v1 import freki_pb2_grpc, geri_pb2_grpc

from odin_client.client.blocking_connection import policy_from
from odin_client.protocol.attempts import Attempts, RetryListener
from odin_client.protocol.channels import call_metadata, channel_credentials, channel_options
from odin_client.protocol.retry import RetryPolicy, attempt_timeout, retryable
from odin_client.protocol.specs import CallSpec, tenant_of
from odin_client.settings import OdinSettings
from odin_client.types.errors import ClientClosed, raise_from_rpc_error

T = TypeVar("T")


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


class AsyncConnection:
    """Channels and retries shared by the calls of :class:`~odin_client.client._async.client.AsyncOdinClient`."""

    def __init__(self, settings: OdinSettings | None = None, *, clock: AsyncClock | None = None,
                 rng: random.Random | None = None, on_retry: RetryListener | None = None) -> None:
        """Create a client; channels open on first use (inside the running event loop); ``on_retry`` as in
        :class:`~odin_client.client.OdinClient`."""
        self.on_retry = on_retry
        self.settings = settings or OdinSettings()
        self.policy: RetryPolicy = policy_from(self.settings)
        self.clock: AsyncClock = clock or LoopClock()
        self.rng = rng or random.Random()
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._closed = False
        self._metadata = call_metadata(self.settings)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close all channels; later calls raise :class:`~odin_client.types.errors.ClientClosed`."""
        self._closed = True
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()

    def _closed_under(self, exc: asyncio.CancelledError) -> asyncio.CancelledError | ClientClosed:
        """What a CancelledError out of a grpc.aio call means: ``close()`` cancelled the call (grpc.aio reports a
        locally cancelled call as CancelledError even in a task nobody cancelled) -> ClientClosed; else the task
        itself is being cancelled, and the CancelledError goes on as it is."""
        task = asyncio.current_task()
        if self._closed and task is not None and task.cancelling() == 0:
            return ClientClosed("the Odin client was closed while the call was running")
        return exc

    @property
    def open_targets(self) -> list[str]:
        """Targets with an open channel."""
        return list(self._channels)

    def _channel(self, target: str) -> grpc.aio.Channel:
        if self._closed:
            raise ClientClosed("the Odin client is closed; create a new AsyncOdinClient")
        channel = self._channels.get(target)
        if channel is None:
            creds = channel_credentials(self.settings)
            options = channel_options(self.settings)
            channel = (grpc.aio.insecure_channel(target, options=options) if creds is None
                       else grpc.aio.secure_channel(target, creds, options=options))
            self._channels[target] = channel
        return channel

    def _freki(self) -> freki_pb2_grpc.FrekiServiceStub:
        return freki_pb2_grpc.FrekiServiceStub(self._channel(self.settings.freki_target))

    def _geri(self) -> geri_pb2_grpc.GeriServiceStub:
        return geri_pb2_grpc.GeriServiceStub(self._channel(self.settings.geri_target))

    def _tenant(self, tenant_id: str | None) -> str:
        return tenant_of(self.settings, tenant_id)

    def _attempts(self, service: str, method: str, budget_s: float, idempotent_read: bool) -> Attempts:
        return Attempts(self.policy, self.clock.monotonic, self.rng, self.on_retry, service=service, method=method,
                        budget_s=budget_s, retryable=retryable(idempotent_read))

    async def _unary(self, invoke: Callable[[float], Awaitable[T]], *, service: str, method: str,
                     budget_s: float, idempotent_read: bool) -> tuple[T, int]:
        """Await ``invoke(timeout)`` until it succeeds, fails for good, or the budget is spent."""
        tries = self._attempts(service, method, budget_s, idempotent_read)
        while True:
            remaining = tries.start()
            try:
                return await invoke(attempt_timeout(remaining, self.settings.attempt_timeout_s)), tries.count
            except grpc.RpcError as exc:
                delay = tries.failed(exc)
            except asyncio.CancelledError as exc:
                raise self._closed_under(exc) from None
            await self.clock.sleep(delay)

    async def _server_stream(self, open_call: Callable[[float], Any], tries: Attempts,
                             on_attempt: Callable[[int], None] | None = None) -> AsyncGenerator[Any, None]:
        """The messages of a server stream, retrying the call only until its first message arrived; a consumer
        that stops early (or a break) cancels the call."""
        while True:
            remaining = tries.start()
            if on_attempt is not None:
                on_attempt(tries.count)
            # The whole remaining budget: a per-attempt cap would cut long generations short.
            call = open_call(remaining)
            try:
                message = await call.read()
                break
            except grpc.RpcError as exc:
                delay = tries.failed(exc)
            except asyncio.CancelledError as exc:
                raise self._closed_under(exc) from None
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
        except asyncio.CancelledError as exc:
            raise self._closed_under(exc) from None
        finally:
            call.cancel()

    def _stub_method(self, spec: CallSpec[Any]) -> Any:
        return getattr(self._freki() if spec.service == "freki" else self._geri(), spec.method)

    async def _call(self, spec: CallSpec[T]) -> T:
        """Run a unary :class:`~odin_client.protocol.specs.CallSpec` with retries; its converted result."""
        method = self._stub_method(spec)
        resp, _ = await self._unary(lambda t: method(spec.request, timeout=t, metadata=self._metadata),
                                    service=spec.service, method=spec.method, budget_s=spec.budget_s,
                                    idempotent_read=spec.idempotent_read)
        return spec.convert(resp)

    async def _stream_call(self, spec: CallSpec[T]) -> AsyncIterator[T]:
        """Run a server-streaming spec (retried until its first message); each message converted."""
        method = self._stub_method(spec)
        tries = self._attempts(spec.service, spec.method, spec.budget_s, spec.idempotent_read)
        messages = self._server_stream(lambda t: method(spec.request, timeout=t, metadata=self._metadata), tries)
        try:
            async for message in messages:
                yield spec.convert(message)
        finally:
            await messages.aclose()
