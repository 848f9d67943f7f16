"""Freki's operational specifics: its metrics, audited RPCs and hot-reloadable settings.

The generic parts (interceptors, endpoint, reload machinery) live in
:mod:`wolf_service.service_ops`; this module says what is special about Freki.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from wolf.v1 import freki_pb2

from freki.api.servicer import FrekiServicer
from freki.engine import FrekiEngine
from freki.ingest.chunking import SemanticChunker
from freki.ingest.limits import ChunkingConfig
from freki.settings import ChunkingSettings, FrekiSettings
from freki.store.disk import LEVELS
from freki.watch.watcher import Watcher
from wolf_service.audit_interceptor import AuditedRpc
from wolf_service.metrics import ServiceMetrics
from wolf_service.tokens import get_token_counter

log = logging.getLogger("freki.operations")

# Fields the servicer reads from the live settings on every call, or that a reload hook applies.
# Anything else (ports, data_dir, embedding model, store backend, fusion internals) needs a restart.
RELOADABLE = frozenset({
    "retrieval.top_k",
    "retrieval.max_top_k",
    "retrieval.score_threshold",
    "retrieval.mode_thresholds",
    "chunking",  # applied to documents indexed (or changed) after the reload
    "max_prompt_chars",
    "max_document_bytes",
    "watch",  # the folder watcher is restarted with the new folders and options
    "search_log",  # read on every search
    "document_types",  # weights: the next search (cached results dropped); chunk profiles: the next document
    "retention",  # policies and interval: the next retention pass (freki.backup.retention reads them live)
})

# Paths on the server's disk: the settings API (wolf_service.settings_api) must not point Freki at files
# an API caller could then read back through retrieval, so only the settings file sets them.
FILE_ONLY = ("watch.folders", "watch.lease_file")

INDEXING_RPCS = ("FrekiService/IndexDocument", "FrekiService/IndexDocuments", "FrekiService/FullReindex")


def _doc_target(request: Any) -> str:
    return f"document={request.document_id or request.source}"


# The API-key scope each RPC needs (wolf_service.auth); an RPC missing here needs "admin".
SCOPES: dict[str, str] = {
    "FrekiService/IndexDocument": "write",
    "FrekiService/IndexDocuments": "write",
    "FrekiService/RetrieveContext": "read",
    "FrekiService/GetDocument": "read",
    "FrekiService/ListDocuments": "read",
    "FrekiService/GetIndexStatus": "read",
    "FrekiService/Embed": "read",
    "FrekiService/ListLinks": "read",
    # Ratings of answers come from whoever reads them (a chat front end holds a read key).
    "FrekiService/RecordFeedback": "read",
    "FrekiService/DeleteDocument": "delete",
    "FrekiService/DeleteOwnerData": "delete",
    # Re-embeds a whole tenant; exports all of one owner's data: operator actions.
    "FrekiService/FullReindex": "admin",
    "FrekiService/ExportOwnerData": "admin",
    # Copies every tenant's data (and the key store) to the server's backup.dir.
    "FrekiService/CreateBackup": "admin",
}

AUDITED: dict[str, AuditedRpc] = {
    "FrekiService/IndexDocument": AuditedRpc(
        "freki.index_document", _doc_target,
        lambda r: {"index_outcome": freki_pb2.IndexOutcome.Name(r.outcome), "chunks": r.chunk_count,
                   "chunks_embedded": r.chunks_embedded, "chunks_deleted": r.chunks_deleted},
    ),
    "FrekiService/DeleteDocument": AuditedRpc(
        "freki.delete_document", _doc_target, lambda r: {"chunks_deleted": r.chunks_deleted}
    ),
    "FrekiService/FullReindex": AuditedRpc(
        "freki.full_reindex", lambda q: f"document={q.document_id or '*'}",
        lambda r: {"documents": r.documents_reindexed, "chunks_embedded": r.chunks_embedded},
    ),
    "FrekiService/DeleteOwnerData": AuditedRpc(
        "gdpr.erase_owner", lambda q: f"owner={q.owner_id}",
        lambda r: {"documents": r.documents_deleted, "chunks_deleted": r.chunks_deleted},
    ),
    "FrekiService/ExportOwnerData": AuditedRpc(
        "gdpr.export_owner", lambda q: f"owner={q.owner_id}", lambda _r: {}
    ),
    # Reads: who read what (ids and counts; never the query or the text returned).
    "FrekiService/RetrieveContext": AuditedRpc(
        "freki.retrieve", lambda q: f"mode={q.retrieval.mode} restricted_to={len(q.retrieval.document_ids)}",
        lambda r: {"hits": len(r.rag_context.documents),
                   "documents": len({d.document_id for d in r.rag_context.documents})},
    ),
    "FrekiService/GetDocument": AuditedRpc("freki.get_document", _doc_target, lambda r: {"chunks": r.chunk_count}),
    "FrekiService/ListDocuments": AuditedRpc(
        "freki.list_documents", lambda q: f"owner={q.owner_id or '*'}", lambda r: {"documents": len(r.documents)}),
    "FrekiService/ListLinks": AuditedRpc(
        "freki.list_links", lambda q: f"document={q.document_id or '*'}",
        lambda r: {"outgoing": len(r.outgoing), "backlinks": len(r.backlinks)}),
    "FrekiService/IndexDocuments": AuditedRpc("freki.index_documents", lambda _q: "batch", lambda _r: {}),
    "FrekiService/RecordFeedback": AuditedRpc("freki.record_feedback", lambda q: f"query={q.query_id}"),
    "FrekiService/Embed": AuditedRpc("freki.embed", lambda q: f"texts={len(q.texts)}"),
    "FrekiService/CreateBackup": AuditedRpc(
        "freki.create_backup", lambda q: f"backup={q.name or '*'}",
        lambda r: {"path": r.path, "files": r.files, "bytes": r.bytes, "documents": r.documents,
                   "chunks": r.chunks, "write_pause_ms": r.write_pause_ms},
    ),
}


class EngineCollector(Collector):
    """Reads the engine's own counters at scrape time (they are plain ints on the embedder)."""

    def __init__(self, engine: FrekiEngine, metrics: ServiceMetrics,
                 watcher: Callable[[], Watcher | None] | None = None) -> None:
        self._engine = engine
        self._metrics = metrics
        self._watcher = watcher

    def collect(self) -> Iterator[Metric]:
        embs = self._engine.embedders  # every embedding model (embedding_models), summed
        for name, doc, value in (
            ("freki_embeddings_computed", "Texts embedded (chunks, sentences, queries)",
             sum(e.texts_embedded for e in embs)),
            ("freki_query_cache_hits", "Query embeddings served from the LRU cache", sum(e.cache_hits for e in embs)),
            ("freki_query_cache_misses", "Query embeddings that had to be computed",
             sum(e.cache_misses for e in embs)),
            ("freki_result_cache_hits", "RetrieveContext answers served from the result cache",
             self._engine.results.hits),
            ("freki_result_cache_misses", "RetrieveContext answers that had to be searched",
             self._engine.results.misses),
        ):
            family = CounterMetricFamily(name, doc)
            family.add_metric([], float(value))
            yield family
        cached = GaugeMetricFamily("freki_result_cache_bytes", "Bytes of results held by the result cache")
        cached.add_metric([], float(self._engine.results.bytes))
        yield cached
        repairs = CounterMetricFamily("freki_repairs", "What the start-up consistency pass removed", labels=["kind"])
        for kind, count in sorted(self._engine.repair_report.counts.items()):
            repairs.add_metric([kind], float(count))
        yield repairs
        disk = self._engine.disk.disk.read()
        for name, doc, value in (
            ("freki_disk_free_bytes", "Free bytes of the data dir's file system", disk.free_bytes),
            ("freki_disk_refuse_below_bytes", "Free bytes under which writes are refused (disk watermarks)",
             disk.refuse_at),
            ("freki_disk_state", "Disk watermark level: 0 ok, 1 warn (low), 2 refuse (writes refused)",
             LEVELS.index(disk.level)),
        ):
            gauge = GaugeMetricFamily(name, doc)
            gauge.add_metric([], float(value))
            yield gauge
        refused = CounterMetricFamily("freki_disk_refused_writes", "Writes refused for lack of disk space")
        refused.add_metric([], float(self._engine.disk.disk.refused))
        yield refused
        quarantine = self._engine.quarantine
        held = GaugeMetricFamily("freki_chunks_quarantined", "Chunks failing their integrity check, not served")
        held.add_metric([], float(len(quarantine.entries())))
        yield held
        for name, doc, value in (
            ("freki_chunks_corrupt_detected", "Chunks found corrupt (on read or by the scrub)", quarantine.detected),
            ("freki_chunks_healed", "Quarantined chunks replaced by re-indexing their document", quarantine.healed),
        ):
            family = CounterMetricFamily(name, doc)
            family.add_metric([], float(value))
            yield family
        killed = CounterMetricFamily("freki_parser_workers_killed", "Parser workers killed on a limit or deadline")
        killed.add_metric([], float(self._engine.sandbox.killed))
        yield killed
        # Documents waiting for or in indexing: running index RPCs plus files the watcher has queued.
        depth = sum(self._metrics.in_flight_count(rpc) for rpc in INDEXING_RPCS)
        watcher = self._watcher() if self._watcher is not None else None
        if watcher is not None:
            depth += watcher.status()[1]
        queue = GaugeMetricFamily("freki_index_queue_depth", "Documents queued or being indexed")
        queue.add_metric([], depth)
        yield queue
        backlog = GaugeMetricFamily("freki_watch_backlog_seconds",
                                    "How long the oldest file queued by the folder watcher has waited (0: none)")
        backlog.add_metric([], watcher.backlog_age() if watcher is not None else 0.0)
        yield backlog


def install_metrics(metrics: ServiceMetrics, engine: FrekiEngine,
                    watcher: Callable[[], Watcher | None] | None = None) -> None:
    """Register Freki's metrics: indexing outcomes and chunk counts, embeddings, queue depth."""
    documents = Counter("freki_documents_indexed", "IndexDocument calls by outcome", ["outcome"],
                        registry=metrics.registry)
    chunks = Counter("freki_chunks_indexed", "Chunks written by created or updated documents",
                     registry=metrics.registry)
    embedded = Counter("freki_chunks_embedded", "Chunks whose embedding was computed while indexing",
                       registry=metrics.registry)

    def on_indexed(response: freki_pb2.IndexDocumentResponse) -> None:
        outcome = freki_pb2.IndexOutcome.Name(response.outcome).removeprefix("INDEX_OUTCOME_").lower()
        documents.labels(outcome).inc()
        if response.outcome != freki_pb2.INDEX_OUTCOME_UNCHANGED:
            chunks.inc(response.chunk_count)
        embedded.inc(response.chunks_embedded)

    def on_reindexed(response: freki_pb2.FullReindexResponse) -> None:
        embedded.inc(response.chunks_embedded)

    metrics.observe_responses("FrekiService/IndexDocument", on_indexed)
    metrics.observe_responses("FrekiService/IndexDocuments",
                              lambda result: on_indexed(result.response) if result.HasField("response") else None)
    metrics.observe_responses("FrekiService/FullReindex", on_reindexed)
    feedback = Counter("freki_feedback_recorded", "RecordFeedback ratings written to the feedback log",
                       ["rating"], registry=metrics.registry)
    metrics.observe_responses("FrekiService/RecordFeedback",
                              lambda response: feedback.labels(str(response.rating)).inc())
    metrics.add_collector(EngineCollector(engine, metrics, watcher))


def _effective(engine: FrekiEngine, cfg: ChunkingConfig) -> str:
    chunker = SemanticChunker(cfg, get_token_counter(), engine.embedder.embed,
                              engine.embedder.window_tokens, engine.embedder.max_seq_length)
    return repr(chunker.effective)


def apply_chunking(engine: FrekiEngine, chunking: ChunkingSettings) -> None:
    """Use new chunking parameters for documents indexed from now on.

    The engine builds a chunker per document from ``engine.chunking``, so replacing it is
    enough for new documents; the indexer's fingerprint (part of each document's content
    hash) is updated too, so re-sending an unchanged document re-chunks it with the new
    parameters — the same as after a restart with the new settings.
    """
    new = ChunkingConfig(max_tokens=chunking.max_tokens, min_tokens=chunking.min_tokens,
                         overlap_tokens=chunking.overlap_tokens,
                         similarity_threshold=chunking.similarity_threshold,
                         boundary_signal=chunking.boundary_signal)
    old_effective, new_effective = _effective(engine, engine.chunking), _effective(engine, new)
    engine.chunking = new
    indexer: Any = engine.indexer
    fingerprint = getattr(indexer, "_fingerprint", None)
    if isinstance(fingerprint, str) and old_effective in fingerprint:
        indexer._fingerprint = fingerprint.replace(old_effective, new_effective)
    log.info("chunking for new documents: %s", new_effective)


def restart_watcher(servicer: FrekiServicer, live: FrekiSettings) -> None:
    """Replace the folder watcher with one for the new ``watch`` settings (none if no folders).

    The old watcher finishes the file in progress and stops; the new one catches up on
    every folder at start, so nothing changed in between is missed.
    """
    old = servicer.watcher
    if old is not None:
        old.stop()
    new = Watcher(servicer.engine, live) if live.watch.folders else None
    if new is not None:
        new.start()
    servicer.watcher = new
    log.info("folder watcher restarted: %s", ", ".join(str(f.path) for f in live.watch.folders) or "no folders")


def current_watcher(servicer: FrekiServicer) -> Callable[[], Watcher | None]:
    """The servicer's watcher of the moment (a reload replaces it), for the queue gauges."""
    return lambda: servicer.watcher


def reload_hook(engine: FrekiEngine, servicer: FrekiServicer) -> Callable[[set[str], FrekiSettings], None]:
    """The reload hook that applies Freki's reloadable changes the engine copied at start-up."""

    def hook(changed: set[str], live: FrekiSettings) -> None:
        if any(name.startswith("chunking.") for name in changed):
            apply_chunking(engine, live.chunking)
        if any(name == "watch" or name.startswith("watch.") for name in changed):
            restart_watcher(servicer, live)
        if any(name == "document_types" or name.startswith("document_types.") for name in changed):
            engine.results.invalidate_all()
            log.info("document types reloaded: %s", ", ".join(sorted(live.document_types)) or "none")
        if any(name == "retention" or name.startswith("retention.") for name in changed) and servicer.retention:
            servicer.retention.reconfigure()
            log.info("retention reloaded: %s every %g s", ", ".join(p.name for p in live.retention.policies)
                     or "no policies", live.retention.interval_s)

    return hook
