"""How ``FrekiEngine`` maps ``FrekiSettings`` onto each stage's own plain config."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from freki.embed.embedder import Embedder
from freki.embed.model import EmbeddingModel
from freki.embed.remote import RemoteEmbedder
from freki.embed.remote_client import ServerConfig
from freki.embed.scheduling import EncoderScheduling
from freki.engine.pool_size import parse_pool_size
from freki.ingest.indexing import IngestLimits
from freki.ingest.parsing import ParseLimits
from freki.ingest.quotas import MetadataLimits
from freki.ingest.sandbox import SandboxConfig
from freki.settings import FrekiSettings
from freki.settings.embedding_servers import EmbeddingServer, server_name
from freki.store import StoreConfig
from freki.store.disk import DiskLevels, DiskWatermarks
from freki.store.errors import KeyStoreMismatch
from freki.store.master_key import read_master_key
from wolf_service.errors import FailedPrecondition

log = logging.getLogger("freki.engine")
_WATERMARKS: dict[tuple[Path, DiskLevels], DiskWatermarks] = {}
_WATERMARKS_LOCK = threading.Lock()


def build_embedder(settings: FrekiSettings, model: str | None = None, *,
                   setting: str = "FREKI_EMBEDDING_MODEL") -> EmbeddingModel:
    """The embedder a Freki server with ``settings`` uses for ``model`` (default: the standard model):
    ``server:<name>`` is an ``embedding_servers`` entry's model, anything else loads in-process.
    ``setting`` names where ``model`` was configured (for the load error)."""
    model = model or settings.embedding_model
    name = server_name(model)
    if name is not None:
        server = settings.embedding_servers.get(name)
        if server is None:  # settings validation refuses this; a model recorded by an index may still name one
            raise FailedPrecondition(f"{setting} names {model!r} but embedding_servers has no entry {name!r}")
        return RemoteEmbedder(model, server_config(name, server), query_cache_size=settings.retrieval.query_cache_size,
                              probe_dir=Path(settings.data_dir) / "embedding-probes")
    return Embedder(
        model, device=settings.embedding_device,
        batch_size=settings.embedding_batch_size, query_cache_size=settings.retrieval.query_cache_size,
        backend=settings.embedding_backend, cache_dir=settings.embedding_cache_dir,
        bulk_bf16=settings.embedding_bulk_bf16, bulk_runner=settings.embedding_bulk_runner, setting=setting,
        scheduling=EncoderScheduling(**settings.embedding_scheduling.model_dump()),
    )


def server_config(name: str, server: EmbeddingServer) -> ServerConfig:
    """The embedder's config of the ``embedding_servers`` entry ``name``."""
    values = server.model_dump(exclude={"api_key"})
    return ServerConfig(name=name, api_key=server.api_key.get_secret_value() if server.api_key else None, **values)


def disk_watermarks(settings: FrekiSettings) -> DiskWatermarks:
    """The free-space watermarks of ``settings.data_dir``: one object per data dir and levels in a process, so
    every store, the engine and the metrics share its refusal count and its last level."""
    d = settings.disk
    levels = DiskLevels(warn_free_bytes=d.warn_free_bytes, warn_free_percent=d.warn_free_percent,
                        refuse_free_bytes=d.refuse_free_bytes, refuse_free_percent=d.refuse_free_percent)
    key = (Path(settings.data_dir).resolve(), levels)
    with _WATERMARKS_LOCK:
        if key not in _WATERMARKS:
            _WATERMARKS[key] = DiskWatermarks(settings.data_dir, levels)
        return _WATERMARKS[key]


def store_config(settings: FrekiSettings) -> StoreConfig:
    """Map Freki settings onto the store factory's config."""
    rrf_k = settings.retrieval.rrf_k  # hybrid RRF runs inside the store
    if settings.store.backend == "edge":
        return StoreConfig(
            backend="edge", data_dir=settings.data_dir / "qdrant", rrf_k=rrf_k,
            flush_writes=settings.store.flush_each_write, search_threads=settings.store.search_threads,
            disk=disk_watermarks(settings),
        )
    url = settings.store.url
    # ":memory:" and plain paths select qdrant-client's local mode (tests, tiny setups).
    if url == ":memory:":
        return StoreConfig(backend="remote", location=url, rrf_k=rrf_k)
    if "://" not in url:
        return StoreConfig(backend="remote", path=url, rrf_k=rrf_k)
    return StoreConfig(
        backend="remote", url=url, api_key=settings.store.api_key, timeout_s=settings.store.timeout_s,
        rrf_k=rrf_k,
    )


def ingest_limits(settings: FrekiSettings) -> IngestLimits:
    """What the indexer refuses after parsing (``settings.limits``)."""
    lim = settings.limits
    return IngestLimits(
        metadata=MetadataLimits(max_keys=lim.metadata_keys, max_value_chars=lim.metadata_value_chars,
                                max_bytes=lim.metadata_bytes),
        max_chunks=lim.max_chunks_per_document, parse=parse_limits(settings),
    )


def sandbox_config(settings: FrekiSettings) -> SandboxConfig:
    """The parser sandbox's limits from ``settings.limits``."""
    lim = settings.limits
    pool = parse_pool_size(lim.parse_workers, lim.parse_memory_mb)
    log.info("parser pool: %d worker processes of at most %d MiB each (%s)", pool.workers, lim.parse_memory_mb,
             pool.reason)
    return SandboxConfig(
        memory_mb=lim.parse_memory_mb, timeout_s=lim.parse_timeout_s, workers=pool.workers,
        max_documents=lim.parse_worker_documents, parse=parse_limits(settings),
    )


def parse_limits(settings: FrekiSettings) -> ParseLimits:
    """What parsing may produce (``settings.limits``)."""
    lim = settings.limits
    return ParseLimits(
        max_text_chars=lim.max_text_chars, zip_max_members=lim.zip_max_members,
        zip_max_inflated_bytes=lim.zip_max_inflated_bytes, zip_max_ratio=lim.zip_max_ratio,
        yaml_max_bytes=lim.yaml_max_bytes, yaml_max_depth=lim.yaml_max_depth, yaml_max_keys=lim.yaml_max_keys,
        html_max_depth=lim.html_max_depth, max_links=settings.graph.max_links_per_document,
        # Office formats, e-mail, e-books
        pptx_max_slides=lim.pptx_max_slides, spreadsheet_max_cells=lim.spreadsheet_max_cells,
        mail_max_attachments=lim.mail_max_attachments, mail_max_attachment_bytes=lim.mail_max_attachment_bytes,
        mail_max_depth=lim.mail_max_depth,
        # OCR
        ocr_max_pages=lim.ocr_max_pages, ocr_max_pixels=lim.ocr_max_pixels, ocr_dpi=lim.ocr_dpi,
        ocr_seconds_per_page=lim.ocr_seconds_per_page, ocr_min_confidence=lim.ocr_min_confidence,
        ocr_languages=lim.ocr_languages,
        # Tables
        table_max_rows=lim.table_max_rows, table_max_columns=lim.table_max_columns,
        pdf_table_pages=lim.pdf_table_pages, pdf_max_pages=lim.pdf_max_pages,
    )


def master_key(settings: FrekiSettings) -> bytes | None:
    """The key store's master key from ``gdpr.master_key_file`` (32 raw bytes or 64 hex digits), if set.

    Raises:
        KeyStoreMismatch: the file cannot be read or holds no key.
    """
    path = settings.gdpr.master_key_file
    if path is None:
        return None
    try:
        return read_master_key(Path(path))
    except (OSError, ValueError) as exc:  # the start stops with this one line (a StoreError), not a traceback
        raise KeyStoreMismatch(f"gdpr.master_key_file: {exc}") from None
