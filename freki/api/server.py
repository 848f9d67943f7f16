"""Freki gRPC server: ``build_server(settings)``, ``serve(settings)``. Nothing runs at import."""

from __future__ import annotations

import logging
import sqlite3

import grpc
from grpc_health.v1 import health_pb2
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.api import operations
from freki.api.servicer import FrekiServicer
from freki.backup.retention import Retention
from freki.engine import FrekiEngine
from freki.engine.health import StoreProbe, store_problem
from freki.settings import FrekiSettings
from freki.store.disk import DiskState
from freki.store.errors import DiskFull, EmbeddingModelMismatch, KeyStoreMismatch, StoreError, StoreUnavailable
from freki.watch.watcher import Watcher
from wolf_service.logs import configure_logging
from wolf_service.reload import SettingsSource
from wolf_service.seed_wire import SEED_FREKI_SERVICE, seed_handler
from wolf_service.service_ops import ServiceOps
from wolf_service.serving import ServerHandle, StopSignals, serve_until_signal
from wolf_service.startup import StartupError

log = logging.getLogger("freki.server")

SERVICE_NAME = freki_pb2.DESCRIPTOR.services_by_name["FrekiService"].full_name


def build_server(
    settings: FrekiSettings, *, engine: FrekiEngine | None = None, watcher: Watcher | None = None,
    reload_from: SettingsSource | None = None, sighup: bool = False,
) -> tuple[ServerHandle, FrekiEngine]:
    """Create the engine (unless given), then start a server bound to ``settings.host:port``.

    Metrics, access logs, API keys, TLS and the audit trail follow ``settings`` (all off
    by default); ``reload_from`` turns on hot reload of that settings source.

    Returns:
        The running server's handle (port 0 resolves to the bound port) and the engine.
    """
    engine = engine or FrekiEngine(settings)
    # The watcher (given, or made when watch.folders is set) starts with the server and stops before the store.
    watcher = watcher or (Watcher(engine, settings) if settings.watch.folders else None)
    servicer = FrekiServicer(engine, settings, watcher=watcher)
    servicer.retention = Retention(engine, settings, watcher=lambda: servicer.watcher)
    ops = ServiceOps("freki", settings, audited=operations.AUDITED, default_tenant=settings.default_tenant,
                     scopes=operations.SCOPES, file_only=operations.FILE_ONLY,
                     audit_path=settings.audit_log or settings.data_dir / "audit.jsonl")

    def register(server: grpc.Server) -> None:
        freki_pb2_grpc.add_FrekiServiceServicer_to_server(servicer, server)
        # The seed's own wire format, onto the same servicer (wolf_service.seed_wire).
        server.add_generic_rpc_handlers((seed_handler(SEED_FREKI_SERVICE, "RetrieveContext",
                                                      servicer.RetrieveContext),))

    operations.install_metrics(ops.metrics, engine, operations.current_watcher(servicer))
    handle = ops.start_server(register, SERVICE_NAME, SEED_FREKI_SERVICE)
    watch_disk_health(handle, engine)
    watch_store_health(handle, engine, servicer, settings)
    if reload_from is not None:
        hooks = [operations.reload_hook(engine, servicer)]
        ops.enable_reload(reload_from, operations.RELOADABLE, hooks=hooks, sighup=sighup)
    if watcher is not None:
        watcher.start()
    servicer.retention.start()
    handle.closers.append(servicer.retention.stop)
    # A settings reload may replace the watcher, so stop whichever one is current.
    handle.closers.append(lambda: servicer.watcher.stop() if servicer.watcher is not None else None)
    log.info("Freki serving on %s:%d (store=%s, model=%s)", settings.host, handle.port,
             engine.chunks.backend, engine.embedder.identity.name)
    return handle, engine


def damaged(exc: Exception, settings: FrekiSettings) -> str:
    """The one-line start-up error for data Freki cannot read: what failed, where, and what to do."""
    return (f"{exc} -- the index files under {settings.data_dir} are damaged: restarting will not help. Keep a "
            "copy of the data dir, then restore it from a backup; without one, move the collection directory "
            "named above out of the way and index the documents again (docs/operations.md, \"Integrity\"). "
            "`freki verify` lists damaged chunks of a data dir Freki can open")


WRITES_HEALTH = "wolf.v1.FrekiService.writes"


def watch_disk_health(handle: ServerHandle, engine: FrekiEngine) -> None:
    """The health service's ``wolf.v1.FrekiService.writes``: NOT_SERVING while the disk watermarks refuse
    writes. The server and FrekiService stay SERVING then: reads are served (docs/operations.md)."""
    def report(state: DiskState) -> None:
        serving = state.level != "refuse"
        handle.health.set(WRITES_HEALTH, health_pb2.HealthCheckResponse.SERVING if serving
                          else health_pb2.HealthCheckResponse.NOT_SERVING)

    report(engine.disk.disk.read())
    engine.disk.disk.listeners.append(report)
    handle.closers.append(lambda: engine.disk.disk.listeners.remove(report))


def watch_store_health(handle: ServerHandle, engine: FrekiEngine, servicer: FrekiServicer,
                       settings: FrekiSettings) -> None:
    """The whole server NOT_SERVING (grpc.health.v1) while the store is gone, SERVING again once it is back;
    GetIndexStatus names the problem meanwhile (``servicer.store_problem``)."""
    def report(problem: str | None) -> None:
        servicer.store_problem = problem
        handle.set_serving(problem is None)

    probe = StoreProbe(lambda: store_problem(settings.data_dir, engine.registry.count),
                       settings.disk.store_probe_interval_s, report)
    handle.closers.append(probe.stop)


def serve(settings: FrekiSettings, reload_from: SettingsSource | None = None) -> None:
    """Run until SIGTERM/SIGINT, then stop gracefully and close the store. SIGHUP reloads settings."""
    with StopSignals() as signals:
        configure_logging(settings.log)
        try:
            handle, engine = build_server(settings, reload_from=reload_from, sighup=reload_from is not None)
        except (StoreUnavailable, EmbeddingModelMismatch, KeyStoreMismatch, DiskFull) as exc:
            # A data dir held by another Freki, a store that cannot be reached, a collection built with another
            # embedding model, a full disk: the CLI says so in one line (wolf_service.startup), not with a traceback.
            raise StartupError(str(exc)) from None
        except StoreError as exc:  # the engine cannot read its own files (CorruptData, undecodable segments)
            raise StartupError(damaged(exc, settings)) from None
        except sqlite3.DatabaseError as exc:  # the key store
            keys = settings.gdpr.keys_path or settings.data_dir / "keys.sqlite"
            raise StartupError(
                f"the key store {keys} is unreadable ({exc}): restore it from a backup; without it the sealed "
                "text of every document is lost (docs/operations.md, \"Integrity\")") from None
        # Once the grace period is over, work still running stops at its next check (parser workers are
        # killed), so neither the watcher's file in progress nor a cancelled RPC holds the process up.
        handle.closers.insert(0, engine.stop_work)
        print(f"freki listening on {settings.host}:{handle.port}", flush=True)
        serve_until_signal(handle, grace=settings.shutdown_grace_s, on_stop=engine.close, signals=signals)
