"""Odin client settings: targets, deadlines, retry parameters, tenant, TLS and API key.

Sources, lowest first: defaults < JSON file (``ODIN_SETTINGS_FILE`` or ``OdinSettings.load(path)``)
< ``ODIN_*`` environment variables < keyword arguments. Tests construct ``OdinSettings(...)`` directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from wolf_service.audit_log import default_state_dir
from wolf_service.settings import FileSettings

# The longest user id Odin sends (the services refuse past their own security.user_id_max_chars, 128 by default).
MAX_USER_CHARS = 1024


class OdinSettings(FileSettings):
    """Everything an Odin client needs to reach Freki and Geri."""

    model_config = SettingsConfigDict(env_prefix="ODIN_", extra="forbid")
    foreign_env_prefixes: ClassVar[tuple[str, ...]] = ("GATEWAY_", "MCP_")  # ODIN_GATEWAY_…, ODIN_MCP_…: their own

    freki_target: str = Field(default="127.0.0.1:50051", description="host:port of Freki (retrieval)")
    geri_target: str = Field(default="127.0.0.1:50052", description="host:port of Geri (generation)")
    tenant_id: str = Field(default="", description='Tenant sent with every call; empty means "default"')
    # Replicas (docs/scaling.md): with a target that names several servers ("dns:///freki:50051" resolving
    # to each replica, or "ipv4:10.0.0.1:50051,10.0.0.2:50051"), "round_robin" spreads calls over all of
    # them and skips one that is down; "pick_first" (gRPC's default) sends everything to one.
    load_balancing: Literal["pick_first", "round_robin"] = Field(
        default="pick_first", description="gRPC load-balancing policy over the addresses a target resolves to"
    )

    # Deadlines are per logical call and include every retry. Generation on a CPU model
    # takes tens of seconds, so it gets its own, longer budget.
    deadline_s: float = Field(default=30.0, gt=0, description="Deadline of a Freki call, retries included")
    index_deadline_s: float = Field(default=300.0, gt=0, description="Deadline of one IndexDocument call")
    generate_deadline_s: float = Field(default=300.0, gt=0, description="Deadline of a Geri call")
    attempt_timeout_s: float | None = Field(
        default=None, gt=0, description="Cap on one attempt so a hung read is retried (None: whole budget)"
    )

    # Freki's servers take messages up to their max_message_bytes (64 MiB by default); a larger IndexDocument
    # request is refused by the client before it is sent, as that document's error, so it does not break a
    # batch's stream.
    max_message_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, description="Largest gRPC message sent or received (a document's request)"
    )

    retry_max_attempts: int = Field(default=10, ge=1, description="Attempts per call, first one included")
    retry_initial_backoff_s: float = Field(default=0.2, ge=0, description="Wait before the 2nd retry")
    retry_max_backoff_s: float = Field(default=60.0, ge=0, description="Cap on the wait between attempts")
    retry_multiplier: float = Field(default=2.0, ge=1, description="Growth of the wait per retry")
    retry_jitter: float = Field(
        default=0.5, ge=0, le=1, description="Fraction of each wait randomised (0 = none, 1 = full jitter)"
    )
    retry_max_server_wait_s: float = Field(
        default=30.0, ge=0, description="Longest retry-after of a rate limit waited out (0 = rate limits fail at once)"
    )

    # Grounded answers (docs/answers.md): Geri applies them (GeriService.Answer). None sends nothing, so Geri's
    # own `answering` settings decide (one place to tune them for every caller); a value here is sent as that
    # field of AnswerOptions and overrides Geri's for this client's answers.
    answer_min_score: float | None = Field(
        default=None, ge=0, le=1, description="Abstain without asking the model when no source scores this high")
    answer_max_sources: int | None = Field(default=None, ge=1, le=20, description="Sources given to the model")
    answer_model_abstains: bool | None = Field(
        default=None, description="The model may say the sources are silent (else only the relevance gate abstains)")
    answer_max_citations: int | None = Field(default=None, ge=1, le=5, description="Sentences an answer may cite")
    answer_min_support: float | None = Field(
        default=None, ge=0, le=1, description="Share of the answer's words its cited sentences must contain")
    answer_max_tokens: int | None = Field(
        default=None, ge=64, description="Tokens of a grounded answer (None: Geri's answering setting)")
    query_variants: int = Field(default=0, ge=0, le=3, description="Paraphrases Geri adds to each search (0 = off)")
    rewrite_followups: bool = Field(default=True, description="Rewrite follow-ups into standalone queries")
    tool_max_steps: int = Field(
        default=4, ge=1, le=16, description="Rounds of tool calls in one loop; then the model must answer")
    tool_timeout_s: float = Field(default=30.0, gt=0, le=3600, description="Time limit of one tool handler run")
    tool_audit_log: Path | None = Field(
        default_factory=lambda: default_state_dir() / "odin-tools.jsonl",
        description="JSON-lines audit of tool calls (on by default; None = off)")
    tool_idempotency_log: Path | None = Field(
        default=None, description="SQLite file where confirmed tool calls are claimed, shared by every process "
                                  "resuming the same conversations (None: this process only); needs "
                                  "tool_idempotency_secret")
    tool_idempotency_secret: SecretStr | None = Field(
        default=None, min_length=32,
        description="Signs pending calls' idempotency keys; the same in every process that resumes another's "
                    "pending calls (None: random per process)")
    user_id: str | None = Field(
        default=None, pattern=rf"^[A-Za-z0-9_.@:+=\-]{{1,{MAX_USER_CHARS}}}$",
        description="The end user calls are made for, sent as 'x-wolf-user' (audit, sessions, tool handlers)")

    api_key: SecretStr | None = Field(default=None, description="Sent as 'authorization: Bearer <key>'")
    tls: bool = Field(default=False, description="Use TLS (implied by any tls_* path)")
    tls_root_certs: Path | None = Field(default=None, description="PEM roots for servers (None: system)")
    tls_client_cert: Path | None = Field(default=None, description="PEM client certificate for mTLS")
    tls_client_key: Path | None = Field(default=None, description="PEM client private key for mTLS")
    tls_server_name: str | None = Field(default=None, description="Name expected in the server certificate")

    @model_validator(mode="after")
    def _shared_log_needs_a_shared_secret(self) -> OdinSettings:
        if self.tool_idempotency_log is not None and self.tool_idempotency_secret is None:
            raise ValueError("tool_idempotency_log is shared between processes, so tool_idempotency_secret must "
                             "be set too (the same in each; ODIN_TOOL_IDEMPOTENCY_SECRET)")
        return self

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
