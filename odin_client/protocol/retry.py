"""Retry policy of the Odin client: what is retried, how long to wait, when to give up.

The rules:

* **What**: only ``UNAVAILABLE`` (the server is down, restarting or dropped the connection) is
  retried for every call; ``DEADLINE_EXCEEDED`` is retried too for idempotent reads
  (RetrieveContext, GetIndexStatus, ListModels), where a hung attempt is cheap to repeat.
  INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED and every other code fail at once: sending the same
  request again cannot change the answer. An UNAVAILABLE can also come after the service did the work
  (the connection dropped before the answer), so a retried write must be safe to repeat: IndexDocument
  is idempotent by contract, RecordFeedback is recorded once per request_id (a retry sends the same
  request), deletions and erasures repeat as no-ops — but a repeated DeleteDocument then answers
  NOT_FOUND, and a repeated Generate with a ``session_id`` stores its turn in the session twice.
* **Rate limits**: ``RESOURCE_EXHAUSTED`` is retried, by every call, only when the server said when a retry
  can succeed (a ``retry-after`` trailer or ``RetryInfo``: a rate or concurrency limit, where the call was
  refused before any work). A refusal without one (a document or message too large, a quota) fails at
  once: the same request is refused again. The wait is the server's retry-after plus up to a quarter of
  ``jitter`` of it (never less: earlier is refused again; the spread keeps clients refused together from
  coming back together), and the call fails at once with the server's error (``RateLimited``) when that
  wait is longer than ``max_server_wait`` or would end past the deadline.
* **When**: the first retry is immediate — the usual cause of a single UNAVAILABLE is a connection the
  server closed (restart, idle timeout) and a fresh connect succeeds at once. Later retries wait
  ``initial * multiplier**(n-2)`` seconds, capped at ``max_backoff`` (default 60 s), minus up to
  ``jitter`` of it at random so many clients do not retry in lock-step.
* **Until**: the caller's overall deadline bounds everything. Each attempt gets the remaining budget
  (optionally capped by a per-attempt timeout) and we give up, without sleeping, as soon as the next
  wait would end past the deadline; ``max_attempts`` is a second bound.
* **Streams**: retried only until the first message arrived; after that a broken stream is an error
  (``StreamInterrupted``), never a silently truncated answer or a duplicated prefix.

Why a loop of ours rather than gRPC's service-config retry policy or tenacity:
docs/decisions/0242-odin-retry-policy.md.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Protocol

import grpc

log = logging.getLogger("odin_client.protocol.retry")

RETRY_ALWAYS: frozenset[grpc.StatusCode] = frozenset({grpc.StatusCode.UNAVAILABLE})
RETRY_IDEMPOTENT_READ: frozenset[grpc.StatusCode] = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
)


def retryable(idempotent_read: bool) -> frozenset[grpc.StatusCode]:
    """The codes a call may retry: DEADLINE_EXCEEDED too only for an idempotent read."""
    return RETRY_IDEMPOTENT_READ if idempotent_read else RETRY_ALWAYS


class Clock(Protocol):
    """Time source and sleeper; tests inject a fake one to check waits exactly."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds``."""
        ...


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        """Seconds on the process's monotonic clock."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Sleep for real."""
        time.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff parameters; see the module docstring for the rationale.

    Attributes:
        max_attempts: Attempts per call, the first one included.
        initial_backoff: Wait before the second (first backed-off) retry, in seconds.
        max_backoff: Cap on any single wait, in seconds.
        multiplier: Growth factor of the wait.
        jitter: Fraction of the wait removed at random (0 = exact waits, 1 = full jitter).
        max_server_wait: Longest retry-after of a rate limit that is waited out, in seconds (0: none is).
    """

    max_attempts: int = 10
    initial_backoff: float = 0.2
    max_backoff: float = 60.0
    multiplier: float = 2.0
    jitter: float = 0.5
    max_server_wait: float = 30.0

    def backoff(self, retry_number: int, rng: random.Random) -> float:
        """Seconds to wait before retry ``retry_number`` (1 = the first retry, which is immediate)."""
        if retry_number <= 1:
            return 0.0
        base = min(self.max_backoff, self.initial_backoff * self.multiplier ** (retry_number - 2))
        return base * (1.0 - self.jitter * rng.random())

    def next_delay(
        self,
        *,
        attempts: int,
        code: grpc.StatusCode,
        retryable: frozenset[grpc.StatusCode],
        now: float,
        deadline: float,
        rng: random.Random,
        retry_after: float | None = None,
    ) -> float | None:
        """Decide whether to retry after a failed attempt.

        Args:
            attempts: Attempts made so far (>= 1).
            code: Status of the failed attempt.
            retryable: Codes this call may retry.
            now: Current clock reading.
            deadline: Clock reading at which the caller's budget ends.
            rng: Random source for jitter.
            retry_after: The wait a RESOURCE_EXHAUSTED refusal named (None: it named none).

        Returns:
            Seconds to wait before the next attempt, or None to give up now.
        """
        if attempts >= self.max_attempts:
            return None
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            if retry_after is None or retry_after > self.max_server_wait:
                return None
            delay = retry_after * (1.0 + 0.25 * self.jitter * rng.random())
        elif code in retryable:
            delay = self.backoff(attempts, rng)
        else:
            return None
        # Waiting past the deadline would only turn a clear "unavailable" into a late one.
        if now + delay >= deadline:
            return None
        return delay


def attempt_timeout(remaining: float, cap: float | None) -> float:
    """Timeout for one attempt: the remaining budget, capped by the per-attempt timeout if any."""
    return remaining if cap is None else min(remaining, cap)
