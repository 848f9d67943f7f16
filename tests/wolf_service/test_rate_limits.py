"""Per-tenant and per-key rate and concurrency limits: the limiter's arithmetic on a fake clock (a seam), then
a real Freki under floods of real gRPC clients, and the real gateway answering 429 with Retry-After."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import grpc
import pytest
import uvicorn

from odin_client import OdinSettings
from odin_client.gateway import GatewaySettings, create_app
from odin_client.types.errors import RateLimited, from_rpc_error
from tests.odin_client.servicers_support import free_port
from tests.wolf_service.conftest import api_keys, bearer, freki_stub, index_request, metrics_url, retrieve_request
from tests.wolf_service.test_metrics import scrape, value
from wolf_service.rate_limits import Limiter, LimitExceeded, RateLimitSettings, Subject
from wolf_service.status_details import details_of, unpacked

pytestmark = pytest.mark.integration


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter(**settings: Any) -> tuple[Limiter, FakeClock]:
    clock = FakeClock()
    parsed = RateLimitSettings(**settings)
    return Limiter(lambda: parsed, clock), clock


def test_a_bucket_allows_its_burst_then_refuses_with_the_wait_until_the_next_token() -> None:
    limits, clock = limiter(per_tenant={"requests_per_second": 2, "burst": 3})
    acme = Subject("tenant", "acme")
    for _ in range(3):
        limits.take_token(acme)
    with pytest.raises(LimitExceeded) as refused:
        limits.take_token(acme)
    assert refused.value.retry_after == pytest.approx(0.5)
    assert "rate limit of 2 requests/s (burst 3; setting rate_limits.per_tenant)" in str(refused.value)
    limits.take_token(Subject("tenant", "globex"))  # another tenant has its own bucket
    clock.now += 0.5
    limits.take_token(acme)  # one token came back
    with pytest.raises(LimitExceeded):
        limits.take_token(acme)


def test_named_overrides_win_and_zero_means_no_limit() -> None:
    limits, _ = limiter(per_tenant={"requests_per_second": 0, "concurrent": 0},
                        tenants={"bulk": {"requests_per_second": 1, "burst": 1}}, keys={"ci": {"concurrent": 1}})
    for _ in range(1000):
        limits.take_token(Subject("tenant", "anyone"))
    limits.take_token(Subject("tenant", "bulk"))
    with pytest.raises(LimitExceeded, match=r"setting rate_limits\.tenants\.bulk\)"):
        limits.take_token(Subject("tenant", "bulk"))
    with limits.running(Subject("key", "ci")):
        with pytest.raises(LimitExceeded, match=r"1 requests running.*rate_limits\.keys\.ci\.concurrent"):
            with limits.running(Subject("key", "ci")):
                pass
    with limits.running(Subject("key", "ci")):  # the slot came back
        pass


def test_the_default_leaves_other_tenants_workers() -> None:
    limits, _ = limiter()
    acme = Subject("tenant", "acme")
    with ExitStack() as held:
        for _ in range(12):
            held.enter_context(limits.running(acme))
        with pytest.raises(LimitExceeded, match="12 requests running"), limits.running(acme):
            pass
        with limits.running(Subject("tenant", "globex")):
            pass


def expect_limited(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value.details()
    return refused.value


def test_a_tenant_over_its_rate_is_refused_with_retry_after_and_others_are_not(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(metrics={"port": 0}, rate_limits={"per_tenant": {"requests_per_second": 1, "burst": 2}})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        for _ in range(2):
            stub.RetrieveContext(retrieve_request("port", tenant="acme"))
        error = expect_limited(lambda: stub.RetrieveContext(retrieve_request("port", tenant="acme")))
        assert "tenant 'acme' is over its rate limit" in error.details()
        odin_error = from_rpc_error(error, service="freki", method="RetrieveContext", attempts=1)
        assert isinstance(odin_error, RateLimited) and 0 < odin_error.retry_after <= 1.0
        found = unpacked(details_of(error))  # the same wait as RetryInfo, and a stable reason
        assert found["ErrorInfo"].reason == odin_error.reason == "RATE_LIMITED"
        delay = found["RetryInfo"].retry_delay.ToTimedelta().total_seconds()
        assert delay == pytest.approx(odin_error.retry_after, abs=1e-3)
        stub.RetrieveContext(retrieve_request("port", tenant="globex"))  # its own bucket
        time.sleep(odin_error.retry_after + 0.05)
        stub.RetrieveContext(retrieve_request("port", tenant="acme"))
        samples = scrape(metrics_url(handle))
    assert value(samples, "wolf_rate_limited_total", method="FrekiService/RetrieveContext") == 1
    assert value(samples, "wolf_rpc_requests_total", service="freki", method="FrekiService/RetrieveContext",
                 code="RESOURCE_EXHAUSTED") == 1


def test_the_rate_holds_under_64_clients_and_the_key_limit_applies_too(start_freki) -> None:  # type: ignore[no-untyped-def]
    rate, burst = 20.0, 10
    handle = start_freki(security={"api_keys": api_keys()}, rate_limits={
        "per_tenant": {"requests_per_second": rate, "burst": burst}, "keys": {"globex-ci": {"concurrent": 1}}})
    outcomes: list[grpc.StatusCode] = []
    lock = threading.Lock()
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)

        def client(_: int) -> None:
            for _ in range(5):
                try:
                    stub.RetrieveContext(retrieve_request("port"), metadata=bearer("acme"))
                    code = grpc.StatusCode.OK
                except grpc.RpcError as exc:
                    code = exc.code()
                with lock:
                    outcomes.append(code)

        start = time.monotonic()
        with ThreadPoolExecutor(64) as pool:
            list(pool.map(client, range(64)))
        elapsed = time.monotonic() - start
        accepted = outcomes.count(grpc.StatusCode.OK)
        assert set(outcomes) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert len(outcomes) == 320 and outcomes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) > 0
        assert accepted <= burst + rate * elapsed + 1, (accepted, elapsed)
        # The globex key may run one call at a time: an index stream it holds open refuses its next call.
        release = threading.Event()

        def held_open() -> Any:
            yield index_request("held", "A document sent on a stream that stays open.")
            release.wait(60)

        stream = stub.IndexDocuments(held_open(), metadata=bearer("globex"))
        next(stream)
        error = expect_limited(lambda: stub.RetrieveContext(retrieve_request("port"), metadata=bearer("globex")))
        assert "key 'globex-ci' already has 1 requests running" in error.details()
        time.sleep(1.0)  # acme's bucket refills
        stub.RetrieveContext(retrieve_request("port"), metadata=bearer("acme"))
        release.set()
        assert list(stream) == []


def test_the_gateway_answers_429_with_retry_after(start_freki) -> None:  # type: ignore[no-untyped-def]
    freki = start_freki(rate_limits={"per_tenant": {"requests_per_second": 0.5, "burst": 1}})
    port = free_port()
    odin = OdinSettings(freki_target=freki.address, geri_target=f"127.0.0.1:{free_port()}")
    app = create_app(GatewaySettings(port=port), odin)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        statuses, retry_after = [], None
        for n in range(2):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/documents", f'{{"text": "Doc {n} text.", "source": "d{n}.md"}}'.encode(),
                {"content-type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=60) as reply:
                    statuses.append(reply.status)
            except urllib.error.HTTPError as err:
                statuses.append(err.code)
                retry_after = err.headers.get("Retry-After")
        assert statuses == [200, 429]
        assert retry_after is not None and 1 <= int(retry_after) <= 2
    finally:
        server.should_exit = True
        thread.join(10)


def test_the_index_stream_takes_a_token_per_document(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(rate_limits={"per_tenant": {"requests_per_second": 0.1, "burst": 2}})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        requests = iter([index_request(f"s{n}", f"Stream document number {n}.", tenant="acme") for n in range(4)])
        results = []
        with pytest.raises(grpc.RpcError) as refused:
            for result in stub.IndexDocuments(requests):
                results.append(result)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert len(results) <= 2
