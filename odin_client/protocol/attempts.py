"""The attempts of one logical call: its deadline, the attempt count, the decision to retry, the notice of a retry.

The policy lives in :mod:`odin_client.protocol.retry`; :class:`Attempts` applies it to one call, whatever does the
waiting: both connections (:mod:`odin_client.client`) run their retry loops over it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from odin_client.protocol.retry import RetryPolicy
from odin_client.settings import OdinSettings
from odin_client.types.errors import (
    SERVICE_TITLES,
    DeadlineExceeded,
    raise_from_rpc_error,
    server_retry_after,
    status_of,
)

log = logging.getLogger("odin_client.protocol.attempts")


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


def policy_from(settings: OdinSettings) -> RetryPolicy:
    """The retry policy described by settings."""
    return RetryPolicy(max_attempts=settings.retry_max_attempts, initial_backoff=settings.retry_initial_backoff_s,
                       max_backoff=settings.retry_max_backoff_s, multiplier=settings.retry_multiplier,
                       jitter=settings.retry_jitter, max_server_wait=settings.retry_max_server_wait_s)


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
                                       now=self.monotonic(), deadline=self.deadline, rng=self.rng,
                                       retry_after=server_retry_after(exc))
        if delay is None:
            raise_from_rpc_error(exc, service=self.service, method=self.method, attempts=self.count)
        notify_retry(self.on_retry, exc, service=self.service, method=self.method, attempt=self.count, delay=delay)
        return delay
