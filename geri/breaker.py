"""A circuit breaker per backend: stop sending work to a backend that keeps failing, try it again later.

Closed: calls go through; ``failure_threshold`` consecutive failures open it. Open: calls are
refused until ``reset_timeout_s`` has passed; then one trial goes through (half-open): success
closes it, failure opens it for another ``reset_timeout_s``. Small on purpose (pybreaker wraps
callables and cannot follow a streamed generation that fails half-way); tests/geri/test_breaker.py
covers each transition.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Thread-safe breaker state for one backend."""

    def __init__(self, failure_threshold: int, reset_timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = failure_threshold
        self._reset = reset_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state: State = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._trial_running = False

    @property
    def state(self) -> State:
        """The state now (an open breaker whose timeout passed reads as half-open)."""
        with self._lock:
            if self._state == "open" and self._clock() - self._opened_at >= self._reset:
                return "half_open"
            return self._state

    def allow(self) -> bool:
        """Whether a call may go to the backend now; in half-open state only one trial at a time."""
        with self._lock:
            if self._state == "closed":
                return True
            if self._state == "open":
                if self._clock() - self._opened_at < self._reset:
                    return False
                self._state = "half_open"
            if self._trial_running:
                return False
            self._trial_running = True
            return True

    def success(self) -> None:
        """The backend answered: close the breaker."""
        with self._lock:
            self._state, self._failures, self._trial_running = "closed", 0, False

    def failure(self) -> None:
        """The backend failed: count it; open the breaker at the threshold or after a failed trial."""
        with self._lock:
            self._failures += 1
            if self._state == "half_open" or self._failures >= self._threshold:
                self._state, self._opened_at = "open", self._clock()
            self._trial_running = False

    def release(self) -> None:
        """A call that was allowed ended without telling success or failure (e.g. cancelled)."""
        with self._lock:
            self._trial_running = False
