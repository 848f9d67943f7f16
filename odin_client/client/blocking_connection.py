"""What every blocking Odin call needs: settings, the channel pool, the retrying call runner, the stubs."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any, Self, TypeVar

import grpc
from wolf.v1 import freki_pb2_grpc, geri_pb2_grpc

from odin_client.protocol.attempts import CallRunner, RetryListener
from odin_client.protocol.channels import ChannelPool, call_metadata
from odin_client.protocol.retry import Clock, RetryPolicy, retryable
from odin_client.protocol.specs import CallSpec, tenant_of
from odin_client.settings import OdinSettings
from odin_client.types.errors import ClientClosed, OdinError

R = TypeVar("R")


def policy_from(settings: OdinSettings) -> RetryPolicy:
    """The retry policy described by settings."""
    return RetryPolicy(
        max_attempts=settings.retry_max_attempts,
        initial_backoff=settings.retry_initial_backoff_s,
        max_backoff=settings.retry_max_backoff_s,
        multiplier=settings.retry_multiplier,
        jitter=settings.retry_jitter,
    )


class Connection:
    """Channels and retries shared by the calls of :class:`~odin_client.client.OdinClient`."""

    def __init__(
        self,
        settings: OdinSettings | None = None,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        on_retry: RetryListener | None = None,
    ) -> None:
        """Create a client; no connection is made until the first call.

        Args:
            settings: Targets, deadlines, retry, TLS; defaults to ``OdinSettings()`` (env + file).
            clock: Time source/sleeper for retries (tests inject a fake).
            rng: Random source for backoff jitter.
            on_retry: Called with a :class:`~odin_client.protocol.attempts.RetryNotice` before each retry's wait
                (the CLI prints it), so a caller is not left silent while Odin retries.
        """
        self.settings = settings or OdinSettings()
        self.channels = ChannelPool(self.settings)
        self.runner = CallRunner(
            policy_from(self.settings), attempt_timeout_s=self.settings.attempt_timeout_s,
            clock=clock, rng=rng, on_retry=on_retry,
        )
        self._metadata = call_metadata(self.settings)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close all channels. Further calls raise :class:`~odin_client.types.errors.ClientClosed`."""
        self.channels.close()

    def _freki(self) -> freki_pb2_grpc.FrekiServiceStub:
        return freki_pb2_grpc.FrekiServiceStub(self.channels.get(self.settings.freki_target))

    def _geri(self) -> geri_pb2_grpc.GeriServiceStub:
        return geri_pb2_grpc.GeriServiceStub(self.channels.get(self.settings.geri_target))

    def _tenant(self, tenant_id: str | None) -> str:
        return tenant_of(self.settings, tenant_id)

    def _unary(self, method: Callable[..., Any], request: Any, *, service: str, name: str,
               budget_s: float, idempotent_read: bool) -> tuple[Any, int]:
        try:
            return self.runner.unary(
                lambda timeout: method(request, timeout=timeout, metadata=self._metadata),
                service=service,
                method=name,
                budget_s=budget_s,
                retryable=retryable(idempotent_read),
            )
        except OdinError as exc:
            if exc.code == grpc.StatusCode.CANCELLED and self.channels.closed:  # close() from another thread
                raise ClientClosed("the Odin client was closed while the call was running", service=service,
                                   code=exc.code, details=exc.details, attempts=exc.attempts) from exc
            raise

    def _stub_method(self, spec: CallSpec[Any]) -> Any:
        return getattr(self._freki() if spec.service == "freki" else self._geri(), spec.method)

    def _call(self, spec: CallSpec[R]) -> R:
        """Run a unary :class:`~odin_client.protocol.specs.CallSpec` with retries; its converted result."""
        resp, _ = self._unary(self._stub_method(spec), spec.request, service=spec.service, name=spec.method,
                              budget_s=spec.budget_s, idempotent_read=spec.idempotent_read)
        return spec.convert(resp)

    def _stream_call(self, spec: CallSpec[R]) -> Iterator[R]:
        """Run a server-streaming spec (retried until its first message); each message converted."""
        method = self._stub_method(spec)
        messages = self.runner.stream(
            lambda timeout: method(spec.request, timeout=timeout, metadata=self._metadata),
            service=spec.service, method=spec.method, budget_s=spec.budget_s,
            retryable=retryable(spec.idempotent_read))
        try:
            for message in messages:
                yield spec.convert(message)
        finally:
            messages.close()  # a consumer that stops early cancels the call now
