"""Odin waits out a rate limit by itself: a real Freki with a per-tenant rate limit refuses with
RESOURCE_EXHAUSTED and a retry-after; the client waits that long (never past its deadline, never for a
refusal that names no wait, such as a message too large) and the call succeeds. The policy's arithmetic is
checked on its own first (a pure function: no server, no clock)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from odin_client import OdinClient, OdinError, OdinSettings
from odin_client.protocol.attempts import RetryNotice
from odin_client.protocol.retry import RETRY_ALWAYS, RetryPolicy
from odin_client.types.errors import RateLimited
from tests.odin_client.conftest import real_freki_server
from wolf_service.serving import ServerHandle

LIMITED = grpc.StatusCode.RESOURCE_EXHAUSTED


def delay(policy: RetryPolicy, *, retry_after: float | None, attempts: int = 1, deadline: float = 100.0,
          seed: int = 1) -> float | None:
    return policy.next_delay(attempts=attempts, code=LIMITED, retryable=RETRY_ALWAYS, now=0.0, deadline=deadline,
                             rng=random.Random(seed), retry_after=retry_after)


def test_the_policy_waits_the_servers_retry_after_within_its_bounds() -> None:
    policy = RetryPolicy(jitter=0.5, max_server_wait=10.0, max_attempts=3)
    waits = [delay(policy, retry_after=2.0, seed=s) for s in range(50)]
    assert all(w is not None and 2.0 <= w <= 2.25 for w in waits), "never earlier than the server said"
    assert len(set(waits)) > 1, "jittered, so clients refused together do not return together"
    assert delay(policy, retry_after=None) is None, "a refusal naming no wait (a size limit) is not retried"
    assert delay(policy, retry_after=11.0) is None, "longer than max_server_wait: fail with the server's error"
    assert delay(policy, retry_after=2.0, deadline=2.0) is None, "a wait that ends past the deadline is not begun"
    assert delay(policy, retry_after=2.0, attempts=3) is None, "max_attempts bounds it"
    assert delay(RetryPolicy(max_server_wait=0.0), retry_after=0.5) is None, "0 turns the waiting off"


@pytest.fixture(scope="module")
def limited_freki(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[ServerHandle]:
    """A real Freki: one request per 2 s per tenant (burst 1), and 1 MiB messages at most."""
    with real_freki_server(tmp_path_factory, embedder, max_message_bytes=1024 * 1024,
                           rate_limits={"per_tenant": {"requests_per_second": 0.5, "burst": 1}}) as handle:
        yield handle


def client(handle: ServerHandle, tenant: str, notices: list[RetryNotice]) -> OdinClient:
    return OdinClient(OdinSettings(freki_target=handle.address, tenant_id=tenant), on_retry=notices.append)


def test_a_rate_limited_call_waits_the_retry_after_and_succeeds(limited_freki: ServerHandle) -> None:
    notices: list[RetryNotice] = []
    with client(limited_freki, "waits", notices) as odin:
        odin.retrieve("ferry timetable")  # the burst's one token
        result = odin.retrieve("ferry timetable")  # refused, waited out, answered
    assert result.attempts == 2
    (notice,) = notices
    assert notice.code == "RESOURCE_EXHAUSTED" and "over its rate limit" in notice.details
    assert 0 < notice.delay_s <= 2.0 * 1.125, "the server's retry-after (at most 1/rate) plus jitter"


def test_a_deadline_shorter_than_the_retry_after_fails_at_once(limited_freki: ServerHandle) -> None:
    notices: list[RetryNotice] = []
    with client(limited_freki, "hurried", notices) as odin:
        odin.retrieve("ferry timetable")
        with pytest.raises(RateLimited) as refused:
            odin.retrieve("ferry timetable", deadline_s=0.5)
    assert refused.value.attempts == 1 and notices == [], "no wait begun that would end past the deadline"
    assert refused.value.retry_after > 0.5 and "over its rate limit" in str(refused.value)


def test_a_refusal_without_retry_after_is_not_retried(limited_freki: ServerHandle) -> None:
    notices: list[RetryNotice] = []
    with client(limited_freki, "big", notices) as odin, pytest.raises(OdinError) as refused:
        odin.index_text("x" * (2 * 1024 * 1024), source="big.txt")  # over the server's 1 MiB messages
    assert refused.value.code == LIMITED and not isinstance(refused.value, RateLimited)
    assert refused.value.attempts == 1 and notices == []
