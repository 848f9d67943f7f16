"""Build and run the Geri gRPC server (health, reflection, graceful shutdown). Nothing runs at import."""

from __future__ import annotations

import logging

import grpc
from wolf.v1 import geri_pb2_grpc

from geri import operations
from geri.backends import Backend, create_backend
from geri.service import SERVICE_NAME, GeriServicer
from geri.settings import GeriSettings
from wolf_service.logs import configure_logging
from wolf_service.reload import SettingsSource
from wolf_service.service_ops import ServiceOps
from wolf_service.serving import ServerHandle, serve_until_signal

log = logging.getLogger("geri.server")


def build_server(
    settings: GeriSettings, backend: Backend | None = None, *,
    reload_from: SettingsSource | None = None, sighup: bool = False,
) -> ServerHandle:
    """Create, bind and start Geri; return the handle (``handle.port`` is the bound port).

    Args:
        settings: Geri settings; ``port=0`` binds a free port (what tests use).
        backend: The backend to serve with. None creates the one ``settings.backend`` names
            and prepares it (loads weights / checks Ollama) before the server reports SERVING.
            The caller keeps ownership of a backend it passes in and closes it after ``stop``.
    """
    if backend is None:
        backend = create_backend(settings)
        backend.prepare()
    servicer = GeriServicer(settings, backend)
    # Metrics, access log, API keys, TLS and the generation audit follow settings (docs/operations.md).
    ops = ServiceOps("geri", settings, audited=operations.AUDITED, default_tenant="default")

    def register(server: grpc.Server) -> None:
        geri_pb2_grpc.add_GeriServiceServicer_to_server(servicer, server)

    operations.install_metrics(ops.metrics, backend)
    handle = ops.start_server(register, SERVICE_NAME)
    if reload_from is not None:
        ops.enable_reload(reload_from, operations.RELOADABLE, sighup=sighup)
    log.info(
        "Geri (%s backend, model %s) listening on port %d", backend.kind, backend.default_model, handle.port
    )
    return handle


def serve(settings: GeriSettings, reload_from: SettingsSource | None = None) -> None:
    """Run Geri until SIGTERM/SIGINT, then finish in-flight calls (``shutdown_grace_s``) and exit."""
    configure_logging(settings.log)
    backend = create_backend(settings)
    backend.prepare()
    handle = build_server(settings, backend, reload_from=reload_from, sighup=reload_from is not None)
    serve_until_signal(handle, grace=settings.shutdown_grace_s, on_stop=backend.close)
