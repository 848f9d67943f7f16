"""Build and run the Geri gRPC server (health, reflection, graceful shutdown). Nothing runs at import."""

from __future__ import annotations

import logging

import grpc
from wolf.v1 import geri_pb2_grpc

from geri import operations
from geri.backends import Backend
from geri.routing import Router
from geri.service import SERVICE_NAME, GeriServicer
from geri.sessions import make_store
from geri.settings import GeriSettings
from wolf_service.audit_log import default_state_dir
from wolf_service.logs import configure_logging
from wolf_service.reload import SettingsSource
from wolf_service.seed_wire import SEED_GERI_SERVICE, seed_handler
from wolf_service.service_ops import ServiceOps
from wolf_service.serving import ServerHandle, StopSignals, serve_until_signal

log = logging.getLogger("geri.server")


def build_server(
    settings: GeriSettings, backend: Backend | None = None, *, router: Router | None = None,
    reload_from: SettingsSource | None = None, sighup: bool = False,
) -> ServerHandle:
    """Create, bind and start Geri; return the handle (``handle.port`` is the bound port).

    Args:
        settings: Geri settings; ``port=0`` binds a free port (what tests use).
        backend: One backend to serve with (tests, embedding Geri). None creates the backends of the
            model list (``settings.routes()``) and prepares them (loads weights / checks servers).
            The caller keeps ownership of a backend it passes in and closes it after ``stop``;
            Geri's own backends close with the server.
        router: A ready model list instead (its backends close with the server).
    """
    router = router or Router.from_settings(settings, backend)
    router.prepare()
    sessions = make_store(settings.sessions)
    servicer = GeriServicer(settings, router, sessions)
    # Metrics, access log, API keys, TLS and the generation audit follow settings (docs/operations.md).
    ops = ServiceOps("geri", settings, audited=operations.AUDITED, default_tenant="default",
                     scopes=operations.SCOPES, audit_path=default_state_dir() / "geri-audit.jsonl")

    def register(server: grpc.Server) -> None:
        geri_pb2_grpc.add_GeriServiceServicer_to_server(servicer, server)
        # The seed's own wire format, onto the same servicer (wolf_service.seed_wire).
        server.add_generic_rpc_handlers((seed_handler(SEED_GERI_SERVICE, "Generate", servicer.Generate),))

    operations.install_metrics(ops.metrics, router)
    handle = ops.start_server(register, SERVICE_NAME, SEED_GERI_SERVICE, serving=router.serving)
    # Health follows the backends: NOT_SERVING while none answers (probed in the background).
    router.watch(handle.set_serving)
    handle.closers.extend([router.close, sessions.close])
    if reload_from is not None:
        ops.enable_reload(reload_from, operations.RELOADABLE, hooks=[servicer.settings_reloaded], sighup=sighup)
    log.info("Geri (models: %s) listening on port %d",
             ", ".join(r.label for r in router.routes), handle.port)
    return handle


def serve(settings: GeriSettings, reload_from: SettingsSource | None = None) -> None:
    """Run Geri until SIGTERM/SIGINT, then finish in-flight calls (``shutdown_grace_s``) and exit."""
    with StopSignals() as signals:
        configure_logging(settings.log)
        handle = build_server(settings, reload_from=reload_from, sighup=reload_from is not None)
        serve_until_signal(handle, grace=settings.shutdown_grace_s, signals=signals)
