"""Operations wiring shared by Freki and Geri: metrics, logs, API keys, TLS, audit, reload.

A service builds one :class:`ServiceOps` from its settings, passes
:meth:`ServiceOps.interceptors` and :attr:`ServiceOps.credentials` to
``build_grpc_server``, then calls :meth:`ServiceOps.attach` so the metrics endpoint and
the reload poller stop with the server. Each feature is off unless its settings say so:

=================  =======================================  =====================
feature            settings                                  default
=================  =======================================  =====================
metrics endpoint   ``metrics.port`` (0 = any free port)      off
JSON logs          ``log.level``, ``log.format``            INFO, json
API keys           ``security.api_keys``                    none (no auth)
TLS / mTLS         ``security.tls.cert_file`` … ``client_ca_file``  plaintext
audit trail        ``audit_enabled``, ``audit_log``         on (each service's default file)
rate limits        ``rate_limits``                          12 running calls per tenant
hot reload         ``reload.poll_interval_s`` + SIGHUP      2 s when a file is used
settings API       admin key + a settings file + reload      refused without them
=================  =======================================  =====================
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import grpc
from wolf.v1 import settings_pb2_grpc

from wolf_service.audit_interceptor import AuditedRpc, AuditInterceptor
from wolf_service.audit_log import AuditLog
from wolf_service.auth import ApiKeyInterceptor
from wolf_service.error_mapping import ErrorMappingInterceptor
from wolf_service.logs import AccessLogInterceptor, apply_levels
from wolf_service.metrics import MetricsInterceptor, MetricsServer, ServiceMetrics
from wolf_service.rate_limits import RateLimitInterceptor
from wolf_service.reload import ReloadHook, SettingsReloader, SettingsSource
from wolf_service.serving import ServerHandle, build_grpc_server
from wolf_service.settings_api import AUDITED as SETTINGS_AUDITED
from wolf_service.settings_api import SCOPES as SETTINGS_SCOPES
from wolf_service.settings_api import SERVICE_NAME as SETTINGS_SERVICE
from wolf_service.settings_api import SettingsApi
from wolf_service.tls import server_credentials

log = logging.getLogger("wolf_service.ops")

# Safe to change on a running service of either kind; each service adds its own.
COMMON_RELOADABLE = frozenset({"log.level", "log.levels", "security.api_keys", "reload.poll_interval_s", "rate_limits"})


class ServiceOps:
    """The operational parts of one server, built from its settings.

    Args:
        service: ``"freki"`` or ``"geri"`` (metric label, log name).
        settings: The live settings object; must have ``metrics``, ``log``, ``security``,
            ``rate_limits``, ``audit_log`` and ``reload`` fields.
        audited: RPCs written to the audit log.
        scopes: The API-key scope each RPC needs (unlisted RPCs need ``admin``).
        default_tenant: What an empty ``tenant_id`` means, for logs and audit.
        audit_path: The audit file when ``settings.audit_log`` is unset; ``settings.audit_enabled`` False = none.
        file_only: Settings the settings API must not change besides ``security`` (paths on the disk).
    """

    def __init__(
        self, service: str, settings: Any, *, audited: Mapping[str, AuditedRpc] | None = None,
        default_tenant: str = "", audit_path: Path | None = None, scopes: Mapping[str, str] | None = None,
        file_only: Iterable[str] = (),
    ) -> None:
        self.service = service
        self.settings = settings
        self.metrics = ServiceMetrics(service)
        # The lambda reads the live settings, so rotated keys apply on reload without a restart.
        self.auth = ApiKeyInterceptor(lambda: settings.security.api_keys, {**(scopes or {}), **SETTINGS_SCOPES},
                                      lambda: settings.security.user_id_max_chars)
        identify = self.auth.identify
        self.audit: AuditInterceptor | None = None
        audit_path = settings.audit_log or audit_path
        if getattr(settings, "audit_enabled", True) and audit_path is not None and audited:
            log = AuditLog(Path(audit_path), getattr(settings, "audit_rotation", None))
            self.audit = AuditInterceptor(log, {**audited, **SETTINGS_AUDITED}, identify, default_tenant,
                                          lambda: settings.security.user_id_max_chars)
        self._access = AccessLogInterceptor(identify, default_tenant, lambda: settings.security.user_id_max_chars)
        self._limits = RateLimitInterceptor(lambda: settings.rate_limits, identify, default_tenant,
                                            self.metrics.rate_limited)
        self.credentials: grpc.ServerCredentials | None = server_credentials(settings.security.tls)
        self.metrics_server: MetricsServer | None = None
        self.reloader: SettingsReloader | None = None
        self.source: SettingsSource | None = None
        self.settings_api = SettingsApi(
            service, settings, lambda: (self.reloader, self.source) if self.reloader and self.source else None,
            lambda: bool(settings.security.api_keys), file_only)

    def interceptors(self) -> list[grpc.ServerInterceptor]:
        """Outermost first: metrics and the access log see every outcome, including auth refusals;
        audit records refused attempts too; errors are mapped closest to the handler."""
        chain: list[grpc.ServerInterceptor] = [MetricsInterceptor(self.metrics), self._access]
        if self.audit is not None:
            chain.append(self.audit)
        chain += [self.auth, self._limits, ErrorMappingInterceptor()]
        return chain

    def start_server(self, register: Callable[[grpc.Server], None], service_name: str,
                     *more_services: str, serving: bool = True) -> ServerHandle:
        """Start the service's gRPC server on ``settings.host:port`` with these interceptors and
        credentials (plus health, reflection and the settings API), then :meth:`attach` to it.
        ``more_services``: further services ``register`` adds (the seed's package), for health and reflection;
        ``serving``: the health status it starts with."""

        def register_all(server: grpc.Server) -> None:
            register(server)
            settings_pb2_grpc.add_SettingsServiceServicer_to_server(self.settings_api, server)

        handle = build_grpc_server(
            register=register_all,
            service_names=[service_name, *more_services, SETTINGS_SERVICE],
            address=f"{self.settings.host}:{self.settings.port}",
            max_workers=self.settings.max_workers,
            max_message_bytes=self.settings.max_message_bytes,
            interceptors=self.interceptors(),
            credentials=self.credentials,
            serving=serving,
        )
        self.attach(handle)
        return handle

    def attach(self, handle: ServerHandle) -> None:
        """Start the metrics endpoint (when configured) and stop it and the reloader with ``handle``."""
        if self.settings.metrics.port is not None:
            self.metrics_server = MetricsServer(self.metrics, self.settings.metrics)
        handle.closers.append(self.close)
        mode = "TLS" if self.credentials is not None else "plaintext"
        if self.settings.security.tls.client_ca_file is not None:
            mode = "mTLS"
        keys = len(self.settings.security.api_keys)
        log.info("%s security: %s, %s", self.service, mode,
                 f"API keys on ({keys} keys)" if keys else "API keys off (no keys configured)")

    def enable_reload(
        self,
        source: SettingsSource,
        reloadable: Iterable[str],
        *,
        hooks: Iterable[ReloadHook] = (),
        sighup: bool = False,
    ) -> SettingsReloader:
        """Reload settings on SIGHUP (``sighup``; main thread only) and when the file changes."""

        def _log_levels(changed: set[str], live: Any) -> None:
            if any(name.startswith("log.") for name in changed):
                apply_levels(live.log)

        self.reloader = SettingsReloader(
            live=self.settings, load=source.load, reloadable=frozenset(reloadable) | COMMON_RELOADABLE,
            path=source.path, hooks=[_log_levels, *hooks],
        )
        self.source = source
        if sighup:
            self.reloader.install_sighup()
        self.reloader.start_polling(self.settings.reload.poll_interval_s)
        return self.reloader

    def close(self) -> None:
        """Stop the metrics endpoint and the reload poller."""
        if self.metrics_server is not None:
            self.metrics_server.close()
            self.metrics_server = None
        if self.reloader is not None:
            self.reloader.close()
