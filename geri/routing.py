"""The ordered model list: which backend to try for a request, falling back down the list, with a breaker each.

A request with no model tries every entry in order; a request naming a model tries the entries of
that name, else passes the name to every entry, each of which says why it cannot serve it (or does:
an Ollama server may have pulled it).
A backend whose breaker is open is skipped until its reset timeout, then tried once (half-open).
A background probe (``breaker.probe_interval_s``) checks every backend, so gRPC health says
NOT_SERVING as soon as none answers and SERVING again when one does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from geri.backends import Backend, create_backend
from geri.breaker import CircuitBreaker
from geri.settings import GeriSettings, ModelRoute
from wolf_service.errors import DeadlineExceeded, FailedPrecondition, ServiceError, Unavailable

log = logging.getLogger("geri.routing")

# Errors that say "this backend cannot serve this now": try the next one. Others (a bad request,
# a cancelled call) would fail the same way anywhere.
FALLBACK_ERRORS: tuple[type[Exception], ...] = (Unavailable, DeadlineExceeded, FailedPrecondition)
# Of those, the ones that say the backend itself is down, for its breaker (a missing model is not).
BREAKER_ERRORS: tuple[type[Exception], ...] = (Unavailable, DeadlineExceeded)


@dataclass
class Route:
    """One entry of the model list with its backend and health."""

    config: ModelRoute
    backend: Backend
    breaker: CircuitBreaker
    priority: int
    alive: bool = True
    last_error: str = ""

    @property
    def state(self) -> str:
        """What ListModels reports: the breaker's state, or "down" when its last probe or call failed."""
        breaker = self.breaker.state
        return "down" if breaker == "closed" and not self.alive else breaker

    @property
    def label(self) -> str:
        """How errors and logs name it: ``openai 'qwen' (priority 0)``."""
        return f"{self.backend.kind} {self.config.name!r} (priority {self.priority})"


class Router:
    """Picks backends for requests and keeps each one's breaker and health."""

    def __init__(self, routes: Sequence[Route], probe_interval_s: float, *, owns_backends: bool = True) -> None:
        if not routes:
            raise ValueError("the model list is empty")
        self.routes = list(routes)
        self._owns_backends = owns_backends
        self._interval = probe_interval_s
        self._listener: Callable[[bool], None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_settings(cls, settings: GeriSettings, backend: Backend | None = None) -> Router:
        """Backends for ``settings.routes()``; a given ``backend`` serves the single entry (tests, embedding)."""
        configs = settings.routes()
        if backend is not None:
            configs = [ModelRoute(name=backend.default_model, backend=_kind(backend))]
        b = settings.breaker
        routes = [Route(cfg, backend or create_backend(settings, cfg),
                        CircuitBreaker(b.failure_threshold, b.reset_timeout_s), i) for i, cfg in enumerate(configs)]
        return cls(routes, b.probe_interval_s, owns_backends=backend is None)

    @property
    def default_model(self) -> str:
        """The first entry's name: what a request without a model gets when everything is healthy."""
        return self.routes[0].config.name

    def prepare(self) -> None:
        """Load or check every backend, then probe them once so health is right from the start."""
        for route in self.routes:
            try:
                route.backend.prepare()
            except ServiceError as exc:
                log.warning("%s is not ready: %s", route.label, exc)
        self.probe_all()

    def candidates(self, requested: str) -> list[tuple[Route, str]]:
        """Entries to try, in order, with the model name to ask each for."""
        if not requested:
            return [(r, r.config.backend_model) for r in self.routes]
        named = [(r, r.config.backend_model) for r in self.routes if r.config.name == requested]
        return named or [(r, requested) for r in self.routes]

    def succeeded(self, route: Route) -> None:
        """A generation on ``route`` finished."""
        route.breaker.success()
        self._set_alive(route, True, "")

    def failed(self, route: Route, error: BaseException) -> None:
        """A generation on ``route`` failed with ``error``."""
        if isinstance(error, BREAKER_ERRORS) or not isinstance(error, ServiceError):
            route.breaker.failure()
            if route.breaker.state == "open":
                self._set_alive(route, False, str(error))
        else:
            route.breaker.release()
        log.warning("%s failed (%s): %s; breaker %s", route.label, type(error).__name__, error, route.breaker.state)

    def probe_all(self) -> None:
        """Probe every backend whose breaker lets a call through; update breakers and health."""
        for route in self.routes:
            if not route.breaker.allow():
                continue
            try:
                route.backend.probe()
            except Exception as exc:  # any failure to answer is "down" for health
                route.breaker.failure()
                self._set_alive(route, False, str(exc))
            else:
                route.breaker.success()
                self._set_alive(route, True, "")
        self._publish()

    @property
    def serving(self) -> bool:
        """Whether any backend can take work now."""
        return any(r.alive and r.breaker.state != "open" for r in self.routes)

    def _set_alive(self, route: Route, alive: bool, error: str) -> None:
        changed = route.alive != alive
        route.alive, route.last_error = alive, error
        if changed:
            log.warning("%s is %s%s", route.label, "up" if alive else "down", f": {error}" if error else "")
            self._publish()

    def _publish(self) -> None:
        if self._listener is not None:
            self._listener(self.serving)

    def watch(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(serving)`` now and whenever health may have changed; probe in the background."""
        self._listener = listener
        self._publish()
        self._thread = threading.Thread(target=self._probe_loop, name="geri-probe", daemon=True)
        self._thread.start()

    def _probe_loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.probe_all()
            except Exception:  # the prober must outlive any one bad probe
                log.exception("backend probe failed")

    def close(self) -> None:
        """Stop probing and close every backend."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._listener = None
        if self._owns_backends:
            for route in self.routes:
                route.backend.close()


def _kind(backend: Backend) -> str:
    return backend.kind if backend.kind in ("ollama", "openai", "embedded") else "embedded"
