"""Circuit breaker transitions, on a fake clock."""

from __future__ import annotations

from geri.breaker import CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_and_refuses_until_the_reset_timeout() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=3, reset_timeout_s=30, clock=clock)
    for _ in range(2):
        assert breaker.allow()
        breaker.failure()
    assert breaker.state == "closed"
    breaker.failure()
    assert breaker.state == "open" and not breaker.allow()
    clock.now += 29.9
    assert not breaker.allow()


def test_a_success_resets_the_failure_count() -> None:
    breaker = CircuitBreaker(failure_threshold=2, reset_timeout_s=30, clock=Clock())
    breaker.failure()
    breaker.success()
    breaker.failure()
    assert breaker.state == "closed"


def test_half_open_allows_one_trial_and_its_outcome_decides() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, reset_timeout_s=10, clock=clock)
    breaker.failure()
    clock.now += 10
    assert breaker.state == "half_open"
    assert breaker.allow()
    assert not breaker.allow()  # one trial at a time
    breaker.failure()  # the trial failed: open for another full timeout
    assert breaker.state == "open" and not breaker.allow()
    clock.now += 10
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and breaker.allow() and breaker.allow()


def test_a_released_trial_lets_the_next_one_through() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, reset_timeout_s=5, clock=clock)
    breaker.failure()
    clock.now += 5
    assert breaker.allow()
    breaker.release()  # cancelled: no verdict
    assert breaker.allow()
