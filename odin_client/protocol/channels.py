"""Lazily opened, reused gRPC channels (one per target), with optional TLS/mTLS and an API key.

A channel is expensive (a TCP/HTTP2 connection, TLS handshake) and multiplexes any number of
calls, so the pool opens one per target on first use and keeps it until :meth:`ChannelPool.retire`. The
pool is the same for both clients; only the opener differs (``grpc`` or ``grpc.aio``), and closing the
retired channels, which ``grpc.aio`` awaits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import grpc

from odin_client.settings import OdinSettings
from odin_client.types.errors import ClientClosed, OdinError

C = TypeVar("C")
# (target, credentials or None for plaintext, channel options) -> a new channel
OpenChannel = Callable[[str, grpc.ChannelCredentials | None, list[tuple[str, Any]]], C]


def _read_pem(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise OdinError(f"cannot read {what} {path}: {exc.strerror}; check the ODIN_TLS_* settings") from exc


def channel_options(settings: OdinSettings) -> list[tuple[str, int | str]]:
    """Channel arguments: message limits and reconnect backoff in line with our retry policy.

    gRPC's own reconnect backoff (1 s growing to 120 s by default) decides when a channel in
    TRANSIENT_FAILURE tries to connect again; until then every call fails fast. Keeping it at our
    initial backoff, capped at a few seconds, lets our retries actually reach a server that came back.
    """
    initial_ms = max(100, int(settings.retry_initial_backoff_s * 1000))
    max_ms = max(initial_ms, int(min(settings.retry_max_backoff_s, 2.0) * 1000))
    options: list[tuple[str, int | str]] = [
        ("grpc.max_receive_message_length", settings.max_message_bytes),
        ("grpc.max_send_message_length", settings.max_message_bytes),
        ("grpc.initial_reconnect_backoff_ms", initial_ms),
        ("grpc.min_reconnect_backoff_ms", initial_ms),
        ("grpc.max_reconnect_backoff_ms", max_ms),
        # Our loop does the retrying; gRPC's own (service-config) retries would multiply attempts.
        ("grpc.enable_retries", 0),
        ("grpc.lb_policy_name", settings.load_balancing),
    ]
    if settings.tls_server_name:
        options.append(("grpc.ssl_target_name_override", settings.tls_server_name))
    return options


def channel_credentials(settings: OdinSettings) -> grpc.ChannelCredentials | None:
    """TLS credentials from settings, or None for plaintext."""
    if not settings.uses_tls:
        return None
    return grpc.ssl_channel_credentials(
        root_certificates=_read_pem(settings.tls_root_certs, "TLS root certificates"),
        private_key=_read_pem(settings.tls_client_key, "TLS client key"),
        certificate_chain=_read_pem(settings.tls_client_cert, "TLS client certificate"),
    )


def call_metadata(settings: OdinSettings) -> tuple[tuple[str, str], ...]:
    """Metadata sent with every call: the API key as a bearer token and the user id, when configured."""
    sent: tuple[tuple[str, str], ...] = ()
    if settings.api_key is not None:
        sent += (("authorization", f"Bearer {settings.api_key.get_secret_value()}"),)
    if settings.user_id:
        sent += (("x-wolf-user", settings.user_id),)
    return sent


class ChannelPool(Generic[C]):
    """One channel per target, opened on first use, retired together. Thread-safe."""

    def __init__(self, settings: OdinSettings, open_channel: OpenChannel[C]) -> None:
        self._settings = settings
        self._open_channel = open_channel
        self._channels: dict[str, C] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`retire` ran."""
        return self._closed

    @property
    def open_targets(self) -> list[str]:
        """Targets with an open channel, in the order they were opened."""
        with self._lock:
            return list(self._channels)

    def get(self, target: str) -> C:
        """Return the channel for ``target``, opening it on first use.

        Raises:
            ClientClosed: the pool was retired (the client closed).
        """
        with self._lock:
            if self._closed:
                raise ClientClosed("the Odin client is closed; create a new client")
            channel = self._channels.get(target)
            if channel is None:
                channel = self._open_channel(target, channel_credentials(self._settings),
                                             channel_options(self._settings))
                self._channels[target] = channel
            return channel

    def retire(self) -> list[C]:
        """Refuse channels from now on; the open ones, for the caller to close. Idempotent."""
        with self._lock:
            self._closed = True
            channels, self._channels = list(self._channels.values()), {}
        return channels
