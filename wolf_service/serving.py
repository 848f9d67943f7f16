"""gRPC server lifecycle: build with health + reflection, serve, stop gracefully.

Follows grpc's Python examples: ``build_grpc_server`` returns a handle holding the
server and its bound port (port 0 picks a free one, which tests use), and
``serve_until_signal`` blocks until SIGTERM/SIGINT, then reports NOT_SERVING on the
health service and stops with a grace period so in-flight calls finish.
"""

from __future__ import annotations

import faulthandler
import logging
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from types import FrameType

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from wolf_service.startup import StartupError

log = logging.getLogger("wolf_service.serving")

# Large enough for a 1,000,000-character prompt or a sizeable PDF in IndexDocument.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclass
class ServerHandle:
    """A started gRPC server and what is needed to stop it cleanly."""

    server: grpc.Server
    port: int
    health: health.HealthServicer
    service_names: Sequence[str]
    # Run after the server stopped (metrics endpoint, reload poller, ...), in order.
    closers: list[Callable[[], None]] = field(default_factory=list)
    _stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>`` for local clients."""
        return f"127.0.0.1:{self.port}"

    def set_serving(self, serving: bool) -> None:
        """Report SERVING / NOT_SERVING for the overall server and each service (never SERVING once stopping)."""
        if serving and self._stopped.is_set():
            return
        status = (
            health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *self.service_names):
            self.health.set(name, status)

    def stop(self, grace: float = 5.0) -> None:
        """Mark NOT_SERVING, refuse new calls, and let in-flight calls finish within ``grace`` seconds."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.set_serving(False)
        self.server.stop(grace).wait()
        for close in self.closers:
            close()


def build_grpc_server(
    *,
    register: Callable[[grpc.Server], None],
    service_names: Sequence[str],
    address: str,
    max_workers: int = 16,
    interceptors: Sequence[grpc.ServerInterceptor] = (),
    credentials: grpc.ServerCredentials | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    serving: bool = True,
) -> ServerHandle:
    """Create, bind and start a server with health checking and reflection.

    Args:
        register: Adds the service implementations (``add_XServicer_to_server``).
        service_names: Full names of the registered services, for health and reflection.
        address: ``host:port``; port 0 binds a free port.
        max_workers: Thread pool size (concurrent RPCs).
        interceptors: Server interceptors, outermost first.
        credentials: TLS credentials; None serves plaintext.
        max_message_bytes: Send/receive message size limit.
        serving: The health status it starts with (False while a backend it needs is not known to answer).

    Returns:
        A started server's handle, reporting ``serving``.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"),
        interceptors=list(interceptors),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
    )
    register(server)
    health_servicer = health.HealthServicer(
        experimental_non_blocking=True,
        experimental_thread_pool=futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="health"),
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (*service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        server,
    )
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError:  # grpcio raises RuntimeError("Failed to bind ...") when the port is taken
        port = 0
    if port == 0:
        raise StartupError(f"cannot listen on {address}: the port is in use or the address is not available")
    server.start()
    handle = ServerHandle(server=server, port=port, health=health_servicer, service_names=service_names)
    handle.set_serving(serving)
    return handle


class StopSignals:
    """SIGTERM and SIGINT caught from the moment this is created until ``restore``.

    Created before a server starts, so a stop asked for while it loads (a supervisor's SIGTERM during a
    model load or a start-up repair) is kept and honoured as soon as the server is up, instead of being
    lost to a handler installed too late or killing the process half-started.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        # For a service that does not answer or does not stop: `kill -USR1 <pid>` writes every thread's stack
        # to stderr, for the rest of the process's life (also while it exits).
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.requested.is_set():
            # A second stop is the operator insisting (a start stuck loading, a grace too long): it gets what
            # the signal did before, at once (SIGINT raises KeyboardInterrupt, SIGTERM ends the process).
            log.warning("received %s again: stopping now, without waiting", name)
            self.restore()
            if signal.getsignal(signum) in (signal.SIG_IGN, None):  # e.g. SIGINT in a background job
                signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)
            return
        log.info("received %s, shutting down (send it again to stop at once)", name)
        self.requested.set()

    def restore(self) -> None:
        """Put back the handlers that were there before (once; later calls do nothing)."""
        previous, self._previous = self._previous, {}
        for sig, old in previous.items():
            signal.signal(sig, old)

    def __enter__(self) -> StopSignals:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.restore()


def serve_until_signal(
    handle: ServerHandle,
    *,
    grace: float,
    on_stop: Callable[[], None] | None = None,
    signals: StopSignals | None = None,
) -> None:
    """Block until SIGTERM or SIGINT (also one caught by ``signals`` before), then stop and run ``on_stop``.
    A second signal during the grace stops at once (:class:`StopSignals`)."""
    own = signals is None
    signals = signals or StopSignals()
    try:
        signals.requested.wait()
        log.info("stopping (grace %.1fs; a second signal stops at once)", grace)
    finally:
        try:
            handle.stop(grace)
            if on_stop is not None:
                on_stop()
        finally:
            if own:
                signals.restore()
        log.info("server on port %d stopped", handle.port)
