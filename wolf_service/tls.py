"""Optional TLS for the gRPC servers, with client-certificate checking (mTLS).

Set ``security.tls.cert_file`` and ``key_file`` to serve TLS; add ``client_ca_file`` to
also require client certificates signed by that CA. Files are read once at start-up
(changing them needs a restart). ``channel_credentials`` builds the matching client
side for the health check and tests.
"""

from __future__ import annotations

from pathlib import Path

import grpc
from pydantic import BaseModel, model_validator


class TlsSettings(BaseModel):
    """Server certificate and key (PEM), and optionally the CA that signs client certificates."""

    cert_file: Path | None = None
    key_file: Path | None = None
    client_ca_file: Path | None = None

    @model_validator(mode="after")
    def _complete(self) -> TlsSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("security.tls needs both cert_file and key_file (or neither)")
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("security.tls.client_ca_file (mTLS) needs cert_file and key_file too")
        return self

    @property
    def enabled(self) -> bool:
        """Whether the server serves TLS."""
        return self.cert_file is not None


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read TLS {what} {path}: {exc.strerror or exc}") from exc


def server_credentials(tls: TlsSettings) -> grpc.ServerCredentials | None:
    """Credentials for ``add_secure_port``, or None for plaintext."""
    if tls.cert_file is None or tls.key_file is None:
        return None
    pair = [(_read(tls.key_file, "key_file"), _read(tls.cert_file, "cert_file"))]
    if tls.client_ca_file is None:
        return grpc.ssl_server_credentials(pair)
    return grpc.ssl_server_credentials(
        pair, root_certificates=_read(tls.client_ca_file, "client_ca_file"), require_client_auth=True
    )


def channel_credentials(
    ca_file: Path | None = None, cert_file: Path | None = None, key_file: Path | None = None
) -> grpc.ChannelCredentials:
    """Client credentials: trust ``ca_file`` (system roots when None) and present a client cert if given."""
    return grpc.ssl_channel_credentials(
        root_certificates=_read(ca_file, "ca_file") if ca_file else None,
        private_key=_read(key_file, "key_file") if key_file else None,
        certificate_chain=_read(cert_file, "cert_file") if cert_file else None,
    )
