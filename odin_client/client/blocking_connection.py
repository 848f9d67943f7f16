"""The blocking connection: grpc channels, the retry loops that wait with ``time.sleep``, the IndexDocuments stream.

The I/O half of :class:`~odin_client.client.OdinClient`; the calls themselves are generated from the asyncio
source (:mod:`odin_client.client`). Its twin is :mod:`odin_client.client.async_connection`: the same
:class:`~odin_client.protocol.channels.ChannelPool` and :class:`~odin_client.protocol.attempts.Attempts`, other
waiting.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Self, TypeAlias, TypeVar

import grpc
from wolf.v1 import freki_pb2

from odin_client.client.connection_core import ConnectionCore
from odin_client.protocol.attempts import Attempts, RetryListener, policy_from
from odin_client.protocol.channels import ChannelPool, call_metadata
from odin_client.protocol.index_stream import IndexBatch, IndexStream, StreamMismatch, built, unusable
from odin_client.protocol.retry import Clock, SystemClock, attempt_timeout
from odin_client.protocol.specs import CallSpec
from odin_client.settings import OdinSettings
from odin_client.tools.driving import Confirm, audit_log
from odin_client.tools.loop import ToolOutcome
from odin_client.tools.registry import ToolRegistry
from odin_client.tools.running import run_call
from odin_client.types.errors import ClientClosed, OdinError, raise_from_rpc_error
from odin_client.types.results import ToolCallRequest

T = TypeVar("T")
# What a server-streaming call hands its reader (a generator: closing it cancels the call).
Stream: TypeAlias = Generator[T, None, None]


def _open_channel(target: str, credentials: grpc.ChannelCredentials | None,
                  options: list[tuple[str, Any]]) -> grpc.Channel:
    if credentials is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, credentials, options=options)


class Connection(ConnectionCore[grpc.Channel]):
    """Channels and retries shared by the calls of :class:`~odin_client.client.OdinClient`."""

    def __init__(self, settings: OdinSettings | None = None, *, clock: Clock | None = None,
                 rng: random.Random | None = None, on_retry: RetryListener | None = None) -> None:
        """Create a client; no connection is made until the first call.

        Args:
            settings: Targets, deadlines, retry, TLS; defaults to ``OdinSettings()`` (env + file).
            clock: Time source/sleeper for retries (tests inject a fake).
            rng: Random source for backoff jitter.
            on_retry: Called with a :class:`~odin_client.protocol.attempts.RetryNotice` before each retry's wait
                (the CLI prints it), so a caller is not left silent while Odin retries.
        """
        self.settings = settings or OdinSettings()
        self.channels: ChannelPool[grpc.Channel] = ChannelPool(self.settings, _open_channel)
        self.policy = policy_from(self.settings)
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.on_retry = on_retry
        self._metadata = call_metadata(self.settings)
        self._tool_audit = audit_log(self.settings.tool_audit_log)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close all channels. Further calls raise :class:`~odin_client.types.errors.ClientClosed`."""
        for channel in self.channels.retire():
            channel.close()

    @contextlib.contextmanager
    def _closing(self) -> Iterator[None]:
        """A call that ``close()`` (from another thread) cancelled ends in ClientClosed, not CANCELLED."""
        try:
            yield
        except OdinError as exc:
            if exc.code == grpc.StatusCode.CANCELLED and self.channels.closed:
                raise ClientClosed("the Odin client was closed while the call was running", service=exc.service,
                                   code=exc.code, details=exc.details, attempts=exc.attempts) from exc
            raise

    def _unary(self, spec: CallSpec[Any]) -> tuple[Any, int]:
        """Run a unary call until it succeeds, fails for good, or the budget is spent; the response and attempts."""
        method = self._stub_method(spec)
        tries = self._attempts(spec)
        with self._closing():
            while True:
                remaining = tries.start()
                try:
                    timeout = attempt_timeout(remaining, self.settings.attempt_timeout_s)
                    return method(spec.request, timeout=timeout, metadata=self._metadata), tries.count
                except grpc.RpcError as exc:
                    delay = tries.failed(exc)
                self.clock.sleep(delay)

    def _server_stream(self, spec: CallSpec[Any], tries: Attempts) -> Generator[Any, None, None]:
        """The messages of a server stream, retrying the call only until its first message arrived; a consumer
        that stops early (or a break) cancels the call."""
        method = self._stub_method(spec)
        while True:
            remaining = tries.start()
            try:
                # The whole remaining budget: a per-attempt cap would cut long generations short.
                call = method(spec.request, timeout=remaining, metadata=self._metadata)
                first = next(call)
                break
            except StopIteration:
                return
            except grpc.RpcError as exc:
                delay = tries.failed(exc)
            self.clock.sleep(delay)
        received = 1
        try:
            yield first
            for message in call:
                received += 1
                yield message
        except grpc.RpcError as exc:
            raise_from_rpc_error(exc, service=tries.service, method=tries.method, attempts=tries.count,
                                 after_messages=received)
        finally:
            call.cancel()  # a consumer that stops early must not leave the server generating for nobody

    def _offload(self, function: Callable[..., T], *args: Any) -> T:
        """Run blocking work (reading files, walking folders): here, in the caller's thread."""
        return function(*args)

    def _confirmed(self, confirm: Confirm | None, call: ToolCallRequest) -> bool:
        """The caller's say on a tool call marked ``confirm`` (none given: declined)."""
        return bool(confirm(call)) if confirm is not None else False

    def _run_tool(self, registry: ToolRegistry, call: ToolCallRequest, caller: Mapping[str, str]) -> ToolOutcome:
        """Run an allowed tool call in a worker thread, within ``tool_timeout_s``; ``caller`` (tenant_id,
        user_id) goes to a handler that declares those parameters."""
        return run_call(registry, call, self.settings.tool_timeout_s, caller)

    def _index_stream(self, batch: IndexBatch) -> None:
        """Send the batch over one IndexDocuments stream, settling each outcome (see
        :mod:`~odin_client.protocol.index_stream`); returns early, leaving documents missing, when it is unusable."""
        stream = IndexStream(batch.docs)

        def requests() -> Iterator[freki_pb2.IndexDocumentRequest]:
            for i, doc in enumerate(batch.docs):
                request = stream.admit(i, built(batch.make_request, doc))
                if request is not None:
                    yield request

        responses = self._freki().IndexDocuments(requests(), timeout=batch.stream_timeout(
            self.settings.index_deadline_s), metadata=self._metadata)
        try:
            for result in responses:
                batch.settle_all(stream.received(result))
            batch.settle_all(stream.ended())
        except grpc.RpcError as exc:
            stream.broke(exc)
        except StreamMismatch as exc:
            unusable(str(exc))
        finally:
            responses.cancel()
