"""Per-tenant and per-API-key limits on request rate and on requests running at once.

One caller must not starve the others: a tenant's bulk import or a runaway client would otherwise take
every worker thread of the server (``max_workers``) and every other tenant's call would queue behind it.
Each call takes a token from its tenant's bucket and its key's bucket (token buckets: a sustained rate
plus a burst) and a slot from each one's concurrency count; the slots are given back when the call ends.
A call over any limit is refused at once with RESOURCE_EXHAUSTED naming the limit and its setting, and
a ``retry-after`` trailing-metadata entry (seconds, decimal) saying when a retry can succeed. Nothing is
queued, so a refused call costs the server almost nothing.

The tenant is the request's ``tenant_id`` (pinned to the API key's tenant by the auth interceptor, which
runs first), or of its nested ``request``; empty means the service's default tenant. In a stream of
requests (IndexDocuments) every message takes a token from its own tenant's bucket.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from prometheus_client import Counter
from pydantic import BaseModel, Field

from wolf_service import status_details
from wolf_service.metrics import metric_method
from wolf_service.wrapping import (
    StreamCall,
    UnaryCall,
    WrappingInterceptor,
    envelope_of,
    is_infrastructure,
)

# Buckets kept at most; the least recently used is dropped first (it starts full again if it comes back).
MAX_BUCKETS = 10_000
# What a caller refused for concurrency is told to wait: no one knows when a running call ends.
CONCURRENCY_RETRY_S = 1.0


class RateLimit(BaseModel):
    """The limits of one tenant or one key. 0 switches a limit off."""

    requests_per_second: float = Field(default=0.0, ge=0, description="Sustained requests per second; 0 = no limit")
    burst: int = Field(default=0, ge=0, description="Requests allowed at once above the rate; 0 = 2 s of the rate")
    concurrent: int = Field(default=0, ge=0, description="Requests running at once; 0 = no limit")

    def capacity(self) -> float:
        """The bucket's size: ``burst``, else two seconds' worth of the rate (at least one request)."""
        return float(self.burst) if self.burst else max(1.0, 2.0 * self.requests_per_second)


class RateLimitSettings(BaseModel):
    """``rate_limits``: defaults for every tenant and every key, and overrides by tenant or key name."""

    per_tenant: RateLimit = Field(
        default_factory=lambda: RateLimit(concurrent=12),
        description="Each tenant's limits. 12 running calls leave 4 of the default 16 workers to other tenants.",
    )
    per_key: RateLimit = Field(default_factory=RateLimit, description="Each API key's limits (off by default)")
    tenants: dict[str, RateLimit] = Field(default_factory=dict, description="Limits of named tenants")
    keys: dict[str, RateLimit] = Field(default_factory=dict, description="Limits of named API keys")

    def for_tenant(self, tenant: str) -> RateLimit:
        return self.tenants.get(tenant, self.per_tenant)

    def for_key(self, key: str) -> RateLimit:
        return self.keys.get(key, self.per_key)


class TokenBucket:
    """A token bucket: ``take`` returns 0 when a token was taken, else the seconds until one is there."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity = rate, capacity
        self.tokens, self.stamp = capacity, now

    def take(self, now: float) -> float:
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class LimitExceeded(Exception):
    """A call is over one of its limits."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Subject:
    """Who a limit applies to: ``("tenant", "acme")`` or ``("key", "acme-ci")``."""

    kind: str
    name: str

    def setting(self, limits: RateLimitSettings) -> str:
        """The setting that holds this subject's limits."""
        overrides = limits.tenants if self.kind == "tenant" else limits.keys
        return f"rate_limits.{self.kind}s.{self.name}" if self.name in overrides else f"rate_limits.per_{self.kind}"


class Limiter:
    """The buckets and running-call counts of every subject (thread-safe)."""

    def __init__(self, settings: Callable[[], RateLimitSettings], clock: Callable[[], float] = time.monotonic) -> None:
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[tuple[Subject, float, float], TokenBucket] = OrderedDict()
        self._running: dict[Subject, int] = {}

    def limits_of(self, subject: Subject) -> RateLimit:
        settings = self._settings()
        return settings.for_tenant(subject.name) if subject.kind == "tenant" else settings.for_key(subject.name)

    def take_token(self, subject: Subject) -> None:
        """Take one request from ``subject``'s rate. Raises LimitExceeded when there is none."""
        limit = self.limits_of(subject)
        if not limit.requests_per_second:
            return
        capacity = limit.capacity()
        key = (subject, limit.requests_per_second, capacity)  # a reloaded limit starts a new bucket
        with self._lock:
            now = self._clock()
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(limit.requests_per_second, capacity, now)
                while len(self._buckets) > MAX_BUCKETS:
                    self._buckets.popitem(last=False)
            self._buckets.move_to_end(key)
            wait = bucket.take(now)
        if wait:
            raise LimitExceeded(
                f"{subject.kind} {subject.name!r} is over its rate limit of {limit.requests_per_second:g} requests/s "
                f"(burst {capacity:g}; setting {subject.setting(self._settings())}); retry in {wait:.2f} s", wait)

    @contextmanager
    def running(self, subject: Subject) -> Iterator[None]:
        """Hold one of ``subject``'s concurrent slots for the block. Raises LimitExceeded when none is free."""
        limit = self.limits_of(subject).concurrent
        with self._lock:
            count = self._running.get(subject, 0)
            if limit and count >= limit:
                raise LimitExceeded(
                    f"{subject.kind} {subject.name!r} already has {count} requests running, its limit "
                    f"(setting {subject.setting(self._settings())}.concurrent); retry when one has finished",
                    CONCURRENCY_RETRY_S)
            self._running[subject] = count + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._running[subject] - 1
                if left:
                    self._running[subject] = left
                else:
                    del self._running[subject]


def request_tenant(request: Any) -> str:
    """The tenant a request names: its ``tenant_id`` or its nested ``request``'s (empty when none)."""
    return str(getattr(envelope_of(request), "tenant_id", "") or "")


class RateLimitInterceptor(WrappingInterceptor):
    """Refuses calls over their tenant's or key's limits (see the module docstring). Runs after auth."""

    def __init__(self, settings: Callable[[], RateLimitSettings],
                 identify: Callable[[grpc.ServicerContext], str | None], default_tenant: str,
                 refused: Counter | None = None) -> None:
        self._limiter = Limiter(settings)
        self._identify = identify
        self._default_tenant = default_tenant or "default"
        self._refused = refused

    def applies_to(self, method: str) -> bool:
        return not is_infrastructure(method)

    def _subjects(self, request: Any, context: grpc.ServicerContext) -> list[Subject]:
        subjects = [Subject("tenant", request_tenant(request) or self._default_tenant)] if request is not None else []
        key = self._identify(context)
        if key is not None:
            subjects.append(Subject("key", key))
        return subjects

    def _refuse(self, method: str, context: grpc.ServicerContext, exc: LimitExceeded) -> None:
        if self._refused is not None:
            self._refused.labels(metric_method(method)).inc()
        status_details.abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc), method=method, exc=exc,
                             reason="RATE_LIMITED", trailing=(("retry-after", f"{exc.retry_after:.3f}"),))

    @contextmanager
    def _admitted(self, method: str, subjects: list[Subject], context: grpc.ServicerContext) -> Iterator[None]:
        with ExitStack() as held:
            try:
                for subject in subjects:
                    self._limiter.take_token(subject)
                for subject in subjects:
                    held.enter_context(self._limiter.running(subject))
            except LimitExceeded as exc:
                held.close()
                self._refuse(method, context, exc)
            yield

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        with self._admitted(method, self._subjects(request, context), context):
            return call(request, context)

    def stream(self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall) -> Iterator[Any]:
        # A stream of requests has no single tenant: its key is held here, each message's tenant in each_message.
        single = not isinstance(request, Iterator)
        with self._admitted(method, self._subjects(request if single else None, context), context):
            yield from call(request, context)

    def each_message(self, method: str, message: Any, context: grpc.ServicerContext) -> Any:
        try:
            self._limiter.take_token(Subject("tenant", request_tenant(message) or self._default_tenant))
        except LimitExceeded as exc:
            self._refuse(method, context, exc)
        return message


def retry_after_seconds(metadata: Any) -> float | None:
    """The ``retry-after`` a refused call carried in its trailing metadata (None when absent or unreadable)."""
    for key, value in metadata or ():
        if key == "retry-after":
            try:
                seconds = float(value)
            except ValueError:
                return None
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None
