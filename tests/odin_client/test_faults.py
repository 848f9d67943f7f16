"""Fault injection: Odin's retries and errors against real in-process gRPC servers (port 0)."""

from __future__ import annotations

import threading
import time

import grpc
import pytest

from odin_client import (
    DeadlineExceeded,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    ServiceUnavailable,
    StreamInterrupted,
)
from tests.odin_client.servicers_support import (
    ControlledFreki,
    FakeClock,
    FixedRandom,
    RecordingClock,
    free_port,
    serve_freki,
)


def test_server_down_then_up_within_budget_succeeds(make_client):
    port = free_port()
    servicer = ControlledFreki()
    handles = []

    def start_server_on_second_wait(n_sleeps: int) -> None:
        if n_sleeps == 2 and not handles:
            handles.append(serve_freki(servicer, f"127.0.0.1:{port}"))

    clock = RecordingClock()
    clock.on_sleep = start_server_on_second_wait
    client = make_client(freki_target=f"127.0.0.1:{port}", clock=clock, deadline_s=20,
                         retry_initial_backoff_s=0.1, retry_max_backoff_s=0.5)
    try:
        result = client.retrieve("which port?")
    finally:
        for handle in handles:
            handle.stop(0)
    assert [s.document_id for s in result.sources] == ["gateway-ports", "gateway-errors"]
    assert result.attempts >= 3  # two refused before the server existed
    assert clock.sleeps[0] == 0.0  # the first retry is immediate
    assert servicer.rec.count("RetrieveContext") == 1


def test_server_stays_down_exact_backoff_then_clear_error(make_client):
    clock = FakeClock()
    client = make_client(freki_target=f"127.0.0.1:{free_port()}", clock=clock, deadline_s=10,
                         retry_initial_backoff_s=0.5, retry_multiplier=2, retry_max_backoff_s=2,
                         retry_max_attempts=100)
    with pytest.raises(ServiceUnavailable) as info:
        client.retrieve("anyone there?")
    err = info.value
    # immediate, then 0.5 * 2**n capped at 2 s; the 8th wait (2 s) would end at 11.5 s > 10 s deadline.
    assert clock.sleeps == [0.0, 0.5, 1.0, 2.0, 2.0, 2.0, 2.0]
    assert err.attempts == 8
    assert err.service == "freki"
    assert err.code == grpc.StatusCode.UNAVAILABLE
    assert "Freki" in str(err) and "8 attempts" in str(err)
    assert isinstance(err.__cause__, grpc.RpcError)


def test_jitter_shortens_waits_by_the_random_fraction(make_client):
    clock = FakeClock()
    client = make_client(freki_target=f"127.0.0.1:{free_port()}", clock=clock, rng=FixedRandom(0.5),
                         retry_initial_backoff_s=1.0, retry_jitter=0.5, retry_max_attempts=4, deadline_s=100)
    with pytest.raises(ServiceUnavailable) as info:
        client.status()
    # base waits 0, 1, 2 — each reduced by jitter * random = 25 %.
    assert clock.sleeps == [0.0, 0.75, 1.5]
    assert info.value.attempts == 4


def test_stays_down_with_real_clock_gives_up_within_deadline(make_client):
    clock = RecordingClock()
    client = make_client(freki_target=f"127.0.0.1:{free_port()}", clock=clock, deadline_s=1.0,
                         retry_initial_backoff_s=0.1, retry_max_attempts=100)
    start = time.monotonic()
    with pytest.raises(ServiceUnavailable):
        client.retrieve("q")
    elapsed = time.monotonic() - start
    assert elapsed >= sum(clock.sleeps)  # it really waited its backoff
    assert elapsed < 1.0 + 0.5  # and gave up within the deadline plus slack
    assert clock.sleeps[:4] == [0.0, 0.1, 0.2, 0.4]


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidRequest),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.PERMISSION_DENIED, PermissionDenied),
    ],
)
def test_non_retryable_codes_fail_after_one_attempt(make_client, freki, code, error):
    servicer, handle = freki
    servicer.rec.faults.code, servicer.rec.faults.details, servicer.rec.faults.fail_times = code, "bad", -1
    clock = FakeClock()
    client = make_client(freki_target=handle.address, clock=clock)
    with pytest.raises(error) as info:
        client.retrieve("q")
    assert info.value.attempts == 1
    assert info.value.details == "bad"
    assert servicer.rec.count("RetrieveContext") == 1
    assert clock.sleeps == []


def test_invalid_argument_not_retried_for_generate_or_index(make_client, freki, geri):
    for servicer in (freki[0], geri[0]):
        servicer.rec.faults.code = grpc.StatusCode.INVALID_ARGUMENT
        servicer.rec.faults.fail_times = -1
    clock = FakeClock()
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, clock=clock)
    with pytest.raises(InvalidRequest) as gen_info:
        client.generate("q")
    with pytest.raises(InvalidRequest) as idx_info:
        client.index_text("text", source="a.md")
    assert gen_info.value.service == "geri" and idx_info.value.service == "freki"
    assert geri[0].rec.count("Generate") == 1 and freki[0].rec.count("IndexDocument") == 1
    assert clock.sleeps == []


def test_unavailable_from_a_live_server_is_retried(make_client, freki):
    servicer, handle = freki
    servicer.rec.faults.fail_times = 2
    clock = FakeClock()
    client = make_client(freki_target=handle.address, clock=clock)
    result = client.retrieve("q")
    assert result.attempts == 3
    assert servicer.rec.count("RetrieveContext") == 3
    assert clock.sleeps == [0.0, 0.05]


def test_deadline_exceeded_retried_for_reads_only(make_client, freki, geri):
    fsvc, fhandle = freki
    gsvc, ghandle = geri
    fsvc.rec.faults.hang_s, fsvc.rec.faults.hang_times = 1.0, 1
    gsvc.rec.faults.hang_s, gsvc.rec.faults.hang_times = 1.0, 1
    client = make_client(freki_target=fhandle.address, geri_target=ghandle.address, attempt_timeout_s=0.3)
    assert client.retrieve("q").attempts == 2  # the hung read was abandoned and retried
    with pytest.raises(DeadlineExceeded) as info:
        client.generate("q")  # generation is not an idempotent read: not retried
    assert info.value.service == "geri" and info.value.attempts == 1
    assert gsvc.rec.count("Generate") == 1


def test_stream_stopped_mid_way_raises_not_truncates(make_client, geri):
    servicer, handle = geri
    servicer.break_after = 2
    client = make_client(geri_target=handle.address)
    received: list[object] = []
    stopper = threading.Thread(target=lambda: (servicer.blocked.wait(10), handle.server.stop(0)))
    stopper.start()
    try:
        with pytest.raises(StreamInterrupted) as info:
            for event in client.generate_stream("q"):
                received.append(event)
    finally:
        servicer.release.set()
        stopper.join()
    assert received == ["The gateway ", "listens on "]
    assert info.value.service == "geri"
    assert "incomplete" in str(info.value)
    assert servicer.rec.count("GenerateStream") == 1  # never retried after the first message


def test_stream_without_final_event_is_an_error(make_client, geri):
    servicer, handle = geri
    servicer.omit_final = True
    client = make_client(geri_target=handle.address)
    with pytest.raises(StreamInterrupted, match="without its final event"):
        list(client.generate_stream("q"))


def test_stream_retried_before_first_message(make_client, geri):
    servicer, handle = geri
    servicer.rec.faults.fail_times = 1
    client = make_client(geri_target=handle.address, clock=FakeClock())
    events = list(client.generate_stream("q"))
    assert events[:-1] == ["The gateway ", "listens on ", "port 7443."]
    final = events[-1]
    assert final.text == "The gateway listens on port 7443." and final.attempts == 2
    assert servicer.rec.count("GenerateStream") == 2


def test_consumer_stopping_early_cancels_the_stream(make_client, geri):
    servicer, handle = geri
    servicer.break_after = 1  # the server would hold the stream open
    client = make_client(geri_target=handle.address)
    events = client.generate_stream("q")
    assert next(events) == "The gateway "
    assert not servicer.terminated.is_set()
    events.close()
    assert servicer.terminated.wait(5)  # the server saw the call end without waiting for the deadline
