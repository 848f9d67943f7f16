"""Odin client settings: targets, deadlines, retry parameters, tenant, TLS and API key.

Sources, lowest first: defaults < JSON file (``ODIN_SETTINGS_FILE`` or ``OdinSettings.load(path)``)
< ``ODIN_*`` environment variables < keyword arguments. Tests construct ``OdinSettings(...)`` directly.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from wolf_service.settings import FileSettings


class OdinSettings(FileSettings):
    """Everything an Odin client needs to reach Freki and Geri."""

    model_config = SettingsConfigDict(env_prefix="ODIN_", extra="forbid")

    freki_target: str = Field(default="127.0.0.1:50051", description="host:port of Freki (retrieval)")
    geri_target: str = Field(default="127.0.0.1:50052", description="host:port of Geri (generation)")
    tenant_id: str = Field(default="", description='Tenant sent with every call; empty means "default"')

    # Deadlines are per logical call and include every retry. Generation on a CPU model
    # takes tens of seconds, so it gets its own, longer budget.
    deadline_s: float = Field(default=30.0, gt=0, description="Deadline of a Freki call, retries included")
    index_deadline_s: float = Field(default=300.0, gt=0, description="Deadline of one IndexDocument call")
    generate_deadline_s: float = Field(default=300.0, gt=0, description="Deadline of a Geri call")
    attempt_timeout_s: float | None = Field(
        default=None, gt=0, description="Cap on one attempt so a hung read is retried (None: whole budget)"
    )

    retry_max_attempts: int = Field(default=10, ge=1, description="Attempts per call, first one included")
    retry_initial_backoff_s: float = Field(default=0.2, ge=0, description="Wait before the 2nd retry")
    retry_max_backoff_s: float = Field(default=60.0, ge=0, description="Cap on the wait between attempts")
    retry_multiplier: float = Field(default=2.0, ge=1, description="Growth of the wait per retry")
    retry_jitter: float = Field(
        default=0.5, ge=0, le=1, description="Fraction of each wait randomised (0 = none, 1 = full jitter)"
    )

    api_key: SecretStr | None = Field(default=None, description="Sent as 'authorization: Bearer <key>'")
    tls: bool = Field(default=False, description="Use TLS (implied by any tls_* path)")
    tls_root_certs: Path | None = Field(default=None, description="PEM roots for servers (None: system)")
    tls_client_cert: Path | None = Field(default=None, description="PEM client certificate for mTLS")
    tls_client_key: Path | None = Field(default=None, description="PEM client private key for mTLS")
    tls_server_name: str | None = Field(default=None, description="Name expected in the server certificate")

    @model_validator(mode="after")
    def _check_tls_pair(self) -> OdinSettings:
        if (self.tls_client_cert is None) != (self.tls_client_key is None):
            raise ValueError("tls_client_cert and tls_client_key must be given together for mTLS")
        return self

    @property
    def uses_tls(self) -> bool:
        """True when channels must be secure."""
        return self.tls or any(
            p is not None for p in (self.tls_root_certs, self.tls_client_cert, self.tls_client_key)
        )
