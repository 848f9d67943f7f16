"""Run one logical call (unary or server-streaming) with retries, a deadline and error conversion.

The policy lives in :mod:`odin_client.protocol.retry`; this module applies it to blocking grpc calls and is
the only place (with its asyncio twin in :mod:`odin_client.client.async_connection`) where ``grpc.RpcError`` is caught.
:class:`Attempts` is the bookkeeping both share: the deadline, the attempt count, the decision to retry.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from odin_client.protocol.retry import Clock, RetryPolicy, SystemClock, attempt_timeout
from odin_client.types.errors import SERVICE_TITLES, DeadlineExceeded, raise_from_rpc_error, status_of

log = logging.getLogger("odin_client.protocol.attempts")

T = TypeVar("T")


def deadline_error(service: str, method: str, budget: float, attempts: int) -> DeadlineExceeded:
    """Error for a budget spent before an attempt could start."""
    return DeadlineExceeded(
        f"{service} {method}: deadline of {budget:.1f}s passed after {attempts} attempt(s)",
        service=service,
        code=grpc.StatusCode.DEADLINE_EXCEEDED,
        attempts=attempts,
    )


@dataclass(frozen=True)
class RetryNotice:
    """A failed attempt that will be retried: what failed, how, and when the next attempt starts."""

    service: str
    method: str
    attempt: int
    code: str
    details: str
    delay_s: float

    def __str__(self) -> str:
        details = f": {self.details[:160]}" if self.details else ""
        wait = f"{self.delay_s:.2f}" if self.delay_s < 1 else f"{self.delay_s:.1f}"
        return (f"{SERVICE_TITLES.get(self.service, self.service)} {self.method} attempt {self.attempt} failed "
                f"({self.code}{details}); retrying in {wait} s")


RetryListener = Callable[[RetryNotice], None]


def notify_retry(listener: RetryListener | None, exc: grpc.RpcError, *, service: str, method: str, attempt: int,
                 delay: float) -> None:
    """Log a retry and tell the caller's listener (a listener's own failure is logged, never raised)."""
    code, details = status_of(exc)
    log.info("%s %s attempt %d failed with %s (%s); retrying in %.2fs", service, method, attempt, code.name,
             details, delay)
    if listener is not None:
        try:
            listener(RetryNotice(service, method, attempt, code.name, details, delay))
        except Exception:  # noqa: BLE001 - a progress callback must not break the call
            log.exception("the on_retry listener failed")


class Attempts:
    """The attempts of one logical call under a :class:`RetryPolicy`, whatever does the waiting.

    ``start()`` before each attempt gives its share of the budget (or raises DeadlineExceeded when none is
    left); ``failed(exc)`` after a failed one gives the wait before the next (announced to ``on_retry``) or
    raises the OdinError that ends the call.
    """

    def __init__(self, policy: RetryPolicy, monotonic: Callable[[], float], rng: random.Random,
                 on_retry: RetryListener | None, *, service: str, method: str, budget_s: float,
                 retryable: frozenset[grpc.StatusCode]) -> None:
        self.policy, self.monotonic, self.rng, self.on_retry = policy, monotonic, rng, on_retry
        self.service, self.method, self.budget_s, self.retryable = service, method, budget_s, retryable
        self.deadline = monotonic() + budget_s
        self.count = 0

    def start(self) -> float:
        """Count a new attempt; the budget it may use (the whole remainder)."""
        remaining = self.deadline - self.monotonic()
        if remaining <= 0:
            raise deadline_error(self.service, self.method, self.budget_s, self.count)
        self.count += 1
        return remaining

    def failed(self, exc: grpc.RpcError) -> float:
        """Seconds to wait before the next attempt; raises the converted error when the call must give up."""
        delay = self.policy.next_delay(attempts=self.count, code=status_of(exc)[0], retryable=self.retryable,
                                       now=self.monotonic(), deadline=self.deadline, rng=self.rng)
        if delay is None:
            raise_from_rpc_error(exc, service=self.service, method=self.method, attempts=self.count)
        notify_retry(self.on_retry, exc, service=self.service, method=self.method, attempt=self.count, delay=delay)
        return delay


class CallRunner:
    """Executes calls under a :class:`RetryPolicy`, with an injectable clock and random source."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        attempt_timeout_s: float | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        on_retry: RetryListener | None = None,
    ) -> None:
        self.policy = policy
        self.on_retry = on_retry
        self.attempt_timeout_s = attempt_timeout_s
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()

    def attempts(self, service: str, method: str, budget_s: float,
                 retryable: frozenset[grpc.StatusCode]) -> Attempts:
        """A new call's attempts, its deadline starting now."""
        return Attempts(self.policy, self.clock.monotonic, self.rng, self.on_retry, service=service, method=method,
                        budget_s=budget_s, retryable=retryable)

    def unary(
        self,
        invoke: Callable[[float], T],
        *,
        service: str,
        method: str,
        budget_s: float,
        retryable: frozenset[grpc.StatusCode],
    ) -> tuple[T, int]:
        """Call ``invoke(timeout)`` until it succeeds, fails for good, or the budget is spent.

        Returns:
            The response and the number of attempts it took.

        Raises:
            OdinError: a subclass naming ``service``, the status and the attempts made.
        """
        tries = self.attempts(service, method, budget_s, retryable)
        while True:
            remaining = tries.start()
            try:
                return invoke(attempt_timeout(remaining, self.attempt_timeout_s)), tries.count
            except grpc.RpcError as exc:
                delay = tries.failed(exc)
            self.clock.sleep(delay)

    def stream(
        self,
        open_stream: Callable[[float], Any],
        *,
        service: str,
        method: str,
        budget_s: float,
        retryable: frozenset[grpc.StatusCode],
        on_attempt: Callable[[int], None] | None = None,
    ) -> Generator[Any, None, None]:
        """Iterate a server stream, retrying the call only until its first message arrived.

        ``open_stream(timeout)`` must return a grpc streaming call (an iterator with ``cancel()``).
        The deadline starts now, not at the first ``next()``; the whole stream shares it.
        ``on_attempt(n)`` is called as attempt ``n`` starts.
        """
        return self._stream(open_stream, self.attempts(service, method, budget_s, retryable), on_attempt)

    def _stream(self, open_stream: Callable[[float], Any], tries: Attempts,
                on_attempt: Callable[[int], None] | None) -> Generator[Any, None, None]:
        while True:
            remaining = tries.start()
            if on_attempt is not None:
                on_attempt(tries.count)
            try:
                # The whole remaining budget: a per-attempt cap would cut long generations short.
                call = open_stream(remaining)
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
            # A consumer that stops early must not leave the server generating for nobody.
            call.cancel()
