"""Prometheus metrics for a gRPC service, on a per-server registry and HTTP port.

Every server gets its own :class:`~prometheus_client.CollectorRegistry`, so several
servers in one process (tests, the demo) never share or clash over metric names.
``MetricsInterceptor`` records per-RPC counts, latencies, in-flight calls and backend
errors by status code; services add their own metrics (chunks indexed, tokens
generated, ...) through :meth:`ServiceMetrics.observe_responses` and custom collectors.
Metrics are off unless ``metrics.port`` is set; port 0 picks a free port (tests).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import start_http_server
from prometheus_client.registry import Collector
from pydantic import BaseModel, Field

from wolf_service.seed_wire import SEED_PACKAGE
from wolf_service.wrapping import StreamCall, UnaryCall, WrappingInterceptor, final_code, observe_stream, rpc_name

log = logging.getLogger("wolf_service.metrics")


def metric_method(method: str) -> str:
    """The ``method`` label of a call: ``FrekiService/RetrieveContext`` for wolf.v1 (and health, reflection),
    ``wolf.seed.FrekiService/RetrieveContext`` for the seed's wire format. The seed's calls reach the same
    servicers, but an operator must tell its clients' traffic, errors and latency from wolf.v1's."""
    if method.lstrip("/").startswith(SEED_PACKAGE + "."):
        return method.lstrip("/")
    return rpc_name(method)

# Codes that mean "a dependency or the server itself failed", not "the caller asked wrongly".
BACKEND_ERROR_CODES = frozenset({
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.FAILED_PRECONDITION,
})

# Generation can take a minute; retrieval a few milliseconds. One bucket set covers both.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

ResponseObserver = Callable[[Any], None]


class MetricsSettings(BaseModel):
    """Where the Prometheus endpoint listens. ``port`` None (the default) turns metrics off."""

    host: str = Field("127.0.0.1", description="Bind address; 0.0.0.0 in containers.")
    port: int | None = Field(None, ge=0, le=65535, description="None = off; 0 = any free port.")


class ServiceMetrics:
    """The metrics of one server, registered in their own registry."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.registry = CollectorRegistry(auto_describe=True)
        # process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds, … and the Python
        # version and GC counts: what an operator looks at first when a server misbehaves.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        labels = ("service", "method", "code")
        self.requests = Counter(
            "wolf_rpc_requests", "RPCs finished, by method and status code", labels, registry=self.registry
        )
        self.latency = Histogram(
            "wolf_rpc_duration_seconds", "RPC wall time from start to last message, by method and status",
            labels, buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.in_flight = Gauge(
            "wolf_rpc_in_flight", "RPCs currently running", ("service", "method"), registry=self.registry
        )
        self.backend_errors = Counter(
            "wolf_backend_errors", "RPCs that failed because the server or a dependency failed "
            "(UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, FAILED_PRECONDITION)",
            labels, registry=self.registry,
        )
        self.rate_limited = Counter(
            "wolf_rate_limited", "Calls refused by a tenant's or API key's rate or concurrency limit", ("method",),
            registry=self.registry,
        )
        self._observers: dict[str, list[ResponseObserver]] = {}

    def observe_responses(self, rpc: str, observer: ResponseObserver) -> None:
        """Call ``observer(message)`` for every message ``rpc`` (e.g. ``FrekiService/IndexDocument``) sends."""
        self._observers.setdefault(rpc, []).append(observer)

    def add_collector(self, collector: Collector) -> None:
        """Register a custom collector (read at scrape time) in this server's registry."""
        self.registry.register(collector)

    def in_flight_count(self, rpc: str) -> float:
        """Current in-flight calls of ``rpc``; used to derive queue depth."""
        # Read the gauge itself, not the registry: this runs inside registry collection (a collector).
        for family in self.in_flight.collect():
            for sample in family.samples:
                if sample.labels.get("method") == rpc:
                    return sample.value
        return 0.0

    def _responded(self, rpc: str, message: Any) -> None:
        for observer in self._observers.get(rpc, ()):
            try:
                observer(message)
            except Exception:  # a metrics bug must never fail the user's call
                log.exception("metrics observer for %s failed", rpc)

    def _finished(self, rpc: str, code: grpc.StatusCode, started: float) -> None:
        labels = (self.service, rpc, code.name)
        self.requests.labels(*labels).inc()
        self.latency.labels(*labels).observe(time.perf_counter() - started)
        if code in BACKEND_ERROR_CODES:
            self.backend_errors.labels(*labels).inc()


class MetricsInterceptor(WrappingInterceptor):
    """Counts and times every RPC (health checks included, so probes show up too)."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        self.metrics = metrics

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        rpc, label = rpc_name(method), metric_method(method)  # observers see our RPC name (same servicer)
        started = time.perf_counter()
        gauge = self.metrics.in_flight.labels(self.metrics.service, label)
        gauge.inc()
        failed = True
        try:
            response = call(request, context)
            failed = False
            self.metrics._responded(rpc, response)
            return response
        finally:
            gauge.dec()
            self.metrics._finished(label, final_code(context, failed), started)

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        rpc, label = rpc_name(method), metric_method(method)
        started = time.perf_counter()
        gauge = self.metrics.in_flight.labels(self.metrics.service, label)
        gauge.inc()

        def on_end(code: grpc.StatusCode, _sent: int, _last: Any) -> None:
            gauge.dec()
            self.metrics._finished(label, code, started)

        return observe_stream(call, request, context, on_end, lambda message: self.metrics._responded(rpc, message))


class MetricsServer:
    """The HTTP endpoint serving one registry at ``/metrics``."""

    def __init__(self, metrics: ServiceMetrics, settings: MetricsSettings) -> None:
        if settings.port is None:
            raise ValueError("metrics.port is not set: metrics are off")
        self._httpd, self._thread = start_http_server(settings.port, settings.host, registry=metrics.registry)
        self.host = settings.host
        self.port = int(self._httpd.server_port)
        log.info("%s metrics on http://%s:%d/metrics", metrics.service, self.host, self.port)

    @property
    def url(self) -> str:
        """Scrape URL of this endpoint."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
