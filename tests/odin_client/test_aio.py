"""AsyncOdinClient against real in-process servers: same retries, errors and results as the blocking one."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest

from odin_client import (
    AsyncOdinClient,
    ClientClosed,
    InvalidRequest,
    OdinSettings,
    ServiceUnavailable,
    StreamInterrupted,
)
from tests.odin_client.servicers_support import free_port


class FakeAsyncClock:
    """Sleeps advance time instantly and are recorded."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _client(clock=None, **settings) -> AsyncOdinClient:
    settings.setdefault("retry_jitter", 0.0)
    return AsyncOdinClient(OdinSettings(**settings), clock=clock)


def test_ask_and_channel_reuse(freki, geri):
    async def run():
        async with _client(freki_target=freki[1].address, geri_target=geri[1].address) as client:
            answer = await client.ask("Which port?", top_k=2, grounded=False)
            streamed: list[str] = []
            answer2 = await client.ask("Which port?", on_text=streamed.append, grounded=False)
            status = await client.status()
            return answer, answer2, streamed, status, client.open_targets

    answer, answer2, streamed, status, targets = asyncio.run(run())
    assert [s.document_id for s in answer.sources] == ["gateway-ports", "gateway-errors"]
    assert "gateway-ports,gateway-errors" in answer.text
    assert streamed == ["The gateway ", "listens on ", "port 7443."]
    assert answer2.text == "The gateway listens on port 7443."
    assert status.document_count == 2
    assert targets == [freki[1].address, geri[1].address]
    assert len({c.peer for c in freki[0].rec.calls}) == 1


def test_stays_down_exact_backoff(geri):
    clock = FakeAsyncClock()

    async def run():
        async with _client(clock, freki_target=f"127.0.0.1:{free_port()}", deadline_s=10,
                           retry_initial_backoff_s=0.5, retry_max_backoff_s=2, retry_max_attempts=100) as c:
            await c.retrieve("q")

    with pytest.raises(ServiceUnavailable) as info:
        asyncio.run(run())
    assert clock.sleeps == [0.0, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0]
    assert info.value.attempts == 8 and info.value.service == "freki"


def test_invalid_argument_not_retried(freki):
    freki[0].rec.faults.code, freki[0].rec.faults.fail_times = grpc.StatusCode.INVALID_ARGUMENT, -1
    clock = FakeAsyncClock()

    async def run():
        async with _client(clock, freki_target=freki[1].address) as c:
            await c.retrieve("q")

    with pytest.raises(InvalidRequest) as info:
        asyncio.run(run())
    assert info.value.attempts == 1 and freki[0].rec.count("RetrieveContext") == 1 and clock.sleeps == []


def test_stream_broken_mid_way_raises(geri):
    servicer, handle = geri
    servicer.break_after = 1
    stopper = threading.Thread(target=lambda: (servicer.blocked.wait(10), handle.server.stop(0)))
    received: list[object] = []

    async def run():
        async with _client(geri_target=handle.address) as c:
            async for event in c.generate_stream("q"):
                received.append(event)

    stopper.start()
    try:
        with pytest.raises(StreamInterrupted):
            asyncio.run(run())
    finally:
        servicer.release.set()
        stopper.join()
    assert received == ["The gateway "]
    assert servicer.rec.count("GenerateStream") == 1


def test_use_after_close_refused(freki):
    async def run():
        client = _client(freki_target=freki[1].address)
        await client.status()
        await client.close()
        await client.status()

    with pytest.raises(ClientClosed):
        asyncio.run(run())
    assert freki[0].rec.count("GetIndexStatus") == 1


def test_on_retry_hears_each_retry_before_its_wait(freki):
    freki[0].rec.faults.fail_times = 2
    clock = FakeAsyncClock()
    notices = []

    async def run():
        async with AsyncOdinClient(OdinSettings(freki_target=freki[1].address, retry_jitter=0.0,
                                                retry_initial_backoff_s=0.5), clock=clock,
                                   on_retry=notices.append) as c:
            await c.retrieve("q")

    asyncio.run(run())
    assert [(n.attempt, n.code, n.service, n.method) for n in notices] == [
        (1, "UNAVAILABLE", "freki", "RetrieveContext"), (2, "UNAVAILABLE", "freki", "RetrieveContext")]
    assert [n.delay_s for n in notices] == clock.sleeps and clock.sleeps[1] == 0.5
    assert str(notices[1]).endswith("attempt 2 failed (UNAVAILABLE: injected failure); retrying in 0.50 s")
