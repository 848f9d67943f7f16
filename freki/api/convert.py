"""Conversions between protobuf messages and Freki's domain objects."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from wolf.v1 import common_pb2, freki_pb2

from freki.api import graph
from freki.api.validation import caller_filter, tenant_of
from freki.engine.blue_green import MigrationStatus
from freki.engine.graph import DocumentLink
from freki.engine.models import ModelStatus
from freki.engine.status import EngineStatus
from freki.ingest.indexing import IndexResult
from freki.ingest.registry import DocumentRecord
from freki.search.filters import to_condition
from freki.search.retrieval import Hit, Query
from freki.settings import FrekiSettings
from freki.store import StoredPoint
from freki.store.metadata import display
from freki.watch.status import FolderStatus

SEARCH_MODES = {
    common_pb2.SEARCH_MODE_DENSE: "dense",
    common_pb2.SEARCH_MODE_SPARSE: "sparse",
    common_pb2.SEARCH_MODE_HYBRID: "hybrid",
}
OUTCOMES = {
    "created": freki_pb2.INDEX_OUTCOME_CREATED,
    "updated": freki_pb2.INDEX_OUTCOME_UPDATED,
    "unchanged": freki_pb2.INDEX_OUTCOME_UNCHANGED,
}


def now_timestamp() -> Timestamp:
    """The current time as a protobuf Timestamp."""
    ts = Timestamp()
    ts.GetCurrentTime()
    return ts


def timestamp(value: datetime) -> Timestamp:
    """A datetime as a protobuf Timestamp."""
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts


def iso_timestamp(value: str) -> Timestamp:
    """An ISO-8601 string as a protobuf Timestamp (empty when unparsable)."""
    ts = Timestamp()
    try:
        ts.FromDatetime(datetime.fromisoformat(value))
    except (TypeError, ValueError):
        pass
    return ts


def query_from_request(request: common_pb2.WolfRequest, settings: FrekiSettings, default_mode: str,
                       access_groups: frozenset[str] | None = None) -> Query:
    """Apply server defaults to a validated RetrieveContext request (``access_groups``: the caller's)."""
    opts = request.retrieval
    mode = SEARCH_MODES.get(opts.mode, default_mode)
    defaults = settings.retrieval
    if opts.HasField("score_threshold"):
        threshold = opts.score_threshold
    elif defaults.score_threshold is not None:
        threshold = defaults.score_threshold
    else:
        threshold = float(getattr(defaults.mode_thresholds, mode, 0.0))
    return Query(
        tenant_id=tenant_of(request.tenant_id, settings),
        text=request.prompt,
        top_k=opts.top_k or settings.retrieval.top_k,
        score_threshold=threshold,
        filters=tuple(to_condition(caller_filter(f)) for f in opts.filters),
        document_ids=tuple(opts.document_ids),
        variants=tuple(opts.query_variants),
        mode=mode,
        mmr_diversity=opts.mmr_diversity if opts.HasField("mmr_diversity") else None,
        rerank=opts.rerank,
        graph_expand=opts.graph_expand if opts.HasField("graph_expand") else settings.graph.expand,
        explain=opts.explain,
        neighbours=opts.neighbours,
        language=request.metadata.language if request.HasField("metadata") else "",
        access_groups=None if access_groups is None else tuple(sorted(access_groups)),
    )


def retrieved_document(hit: Hit) -> common_pb2.RetrievedDocument:
    """A search hit as the RetrievedDocument clients see."""
    payload = hit.payload
    raw = payload.get("metadata") or {}
    metadata = {str(k): display(v) for k, v in raw.items()}
    metadata.setdefault("source", str(payload.get("source", "")))
    metadata.setdefault("content_type", str(payload.get("source_type", "")))
    if payload.get("language"):
        metadata.setdefault("language", str(payload["language"]))  # the language its terms were analyzed in
    return common_pb2.RetrievedDocument(
        document_id=hit.document_id,
        content=hit.content,
        relevance_score=hit.score,
        metadata=metadata,
        metadata_lists=metadata_lists(raw),
        chunk_id=hit.chunk_id,
        chunk_index=int(payload.get("chunk_index", 0)),
        source=str(payload.get("source", "")),
        explanation=graph.explanation(hit.explanation) if hit.explanation is not None else None,
        embedding_model=hit.model,
        location=source_location(raw),
        neighbour_of=hit.neighbour_of,
        overlap_chars=overlap_chars(payload),
    )


def search_log_entry(entry: Mapping[str, Any]) -> freki_pb2.SearchLogEntry:
    """A search-log line (freki.graph.search_log) as the export shows it; fields of the wrong type are left empty."""
    def text(key: str) -> str:
        value = entry.get(key)
        return value if isinstance(value, str) else ""

    listed = entry.get("hits")
    hits = [h for h in listed if isinstance(h, dict)] if isinstance(listed, list) else []
    took = entry.get("took_ms")
    return freki_pb2.SearchLogEntry(
        at=text("at"), query_id=text("query_id"), query=text("query"), mode=text("mode"),
        took_ms=took if isinstance(took, int) and 0 <= took < 2**31 else 0,
        hits=[freki_pb2.SearchLogHit(document_id=str(h.get("document_id", "")), chunk_id=str(h.get("chunk_id", "")),
                                     score=_score(h.get("score"))) for h in hits])


def _score(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def overlap_chars(payload: Mapping[str, object]) -> int:
    """Leading characters of the stored chunk text repeated from the previous chunk (0 when not recorded)."""
    value, content = payload.get("overlap_chars", 0), payload.get("content", "")
    return value if isinstance(value, int) and isinstance(content, str) and 0 < value < len(content) else 0


def source_location(metadata: Mapping[str, object]) -> common_pb2.SourceLocation:
    """Where a chunk sits, from the chunk metadata the chunker wrote (``page``, ``slide``, ``sheet``,
    ``section``); a value that is not what the chunker writes (a caller's own ``page: intro``) is ignored."""
    page, slide = _positive(metadata.get("page")), _positive(metadata.get("slide"))
    sheet = str(metadata.get("sheet") or "") if isinstance(metadata.get("sheet"), str) else ""
    section = metadata.get("section")
    path = [p for p in section.split(" > ") if p] if isinstance(section, str) else []
    where = [f"p. {page}"] if page else []
    where += [f"slide {slide}"] if slide else []
    where += [f"sheet {sheet}"] if sheet else []
    headings = [p for p in path if p != sheet]
    label = " · ".join(filter(None, [", ".join(where), " > ".join(headings)]))
    return common_pb2.SourceLocation(page=page, slide=slide, sheet=sheet, heading_path=path, label=label)


def _positive(value: object) -> int:
    text = value if isinstance(value, str) else ""
    return int(text) if text.isdigit() and 0 < len(text) <= 9 else 0


def metadata_lists(metadata: Mapping[str, object]) -> dict[str, common_pb2.MetadataValues]:
    """The list-valued entries of stored metadata, for the ``metadata_lists`` fields."""
    return {str(k): common_pb2.MetadataValues(values=[str(x) for x in v])
            for k, v in metadata.items() if isinstance(v, list)}


def rag_context(hits: list[Hit], score_threshold: float = 0.0, *, queries: Sequence[str] = (),
                reranked: bool = False, index_epoch: int = 0) -> common_pb2.RAGContext:
    """Hits as a RAGContext whose retrieval_score is the mean relevance (with the threshold applied and
    how many matches it removed, when ``hits`` says: ``freki.search.retrieval.Hits``), and what the search
    did: the ``queries`` searched, whether the re-ranker ran, the tenant's index epoch."""
    docs = [retrieved_document(h) for h in hits]
    mean = sum(h.score for h in hits) / len(hits) if hits else 0.0
    return common_pb2.RAGContext(documents=docs, retrieval_score=mean, score_threshold=score_threshold,
                                 below_threshold=int(getattr(hits, "below_threshold", 0)),
                                 query_id=str(uuid.uuid4()), queries=list(dict.fromkeys(queries)),
                                 reranked=reranked, index_epoch=index_epoch)


def document_info(record: DocumentRecord) -> freki_pb2.DocumentInfo:
    """A registry record as DocumentInfo."""
    return freki_pb2.DocumentInfo(
        document_id=record.document_id,
        tenant_id=record.tenant_id,
        owner_id=record.owner_id,
        source=record.source,
        content_type=record.content_type,
        content_hash=record.content_hash,
        chunk_count=record.chunk_count,
        metadata={k: display(v) for k, v in record.metadata.items()},
        metadata_lists=metadata_lists(record.metadata),
        indexed_at=iso_timestamp(record.indexed_at),
        embedding_model=record.embedding_model,
        embedding_dimension=record.embedding_dimension,
        document_type=record.document_type,
        languages=record.languages,
        access_groups=record.access_groups,
    )


def model_statuses(models: Iterable[ModelStatus]) -> list[freki_pb2.EmbeddingModelStatus]:
    """The index's embedding models as GetIndexStatus reports them."""
    return [freki_pb2.EmbeddingModelStatus(
        model=m.model, dimension=m.dimension, collection=m.collection, document_count=m.document_count,
        chunk_count=m.chunk_count, document_types=list(m.document_types), standard=m.standard,
        available=m.available) for m in models]


def index_response(request_id: str, result: IndexResult) -> freki_pb2.IndexDocumentResponse:
    """An IndexResult as the IndexDocument response."""
    return freki_pb2.IndexDocumentResponse(
        request_id=request_id,
        document_id=result.document_id,
        chunk_count=result.chunk_count,
        chunks_embedded=result.chunks_embedded,
        chunks_unchanged=result.chunks_unchanged,
        chunks_deleted=result.chunks_deleted,
        duration_ms=result.duration_ms,
        changed=result.outcome != "unchanged",
        outcome=OUTCOMES[result.outcome],
        full_reindex=result.full_reindex,
        content_hash=result.content_hash,
    )


def export_records(
    owner_data: Iterable[tuple[DocumentRecord, Iterable[StoredPoint]]],
    links_of: Callable[[str], Sequence[DocumentLink]] | None = None,
) -> Iterator[freki_pb2.ExportRecord]:
    """A data owner's documents (``FrekiEngine.export_owner``) as export records, each followed by its outgoing
    knowledge-graph links (``links_of``: a document id -> its links) and its chunks."""
    for record, chunks in owner_data:
        yield freki_pb2.ExportRecord(document=document_info(record))
        if links_of is not None:
            yield freki_pb2.ExportRecord(links=freki_pb2.ExportedLinks(
                document_id=record.document_id,
                outgoing=[graph.graph_edge(link) for link in links_of(record.document_id)]))
        for point in chunks:
            yield freki_pb2.ExportRecord(chunk=freki_pb2.ExportedChunk(
                chunk_id=point.id,
                document_id=record.document_id,
                chunk_index=int(point.payload.get("chunk_index", 0)),
                content=str(point.payload.get("content", "")),
                metadata={str(k): display(v) for k, v in (point.payload.get("metadata") or {}).items()},
                vector=list(point.dense or []),
            ))


def watch_status_fields(folders: Sequence[FolderStatus], queue_depth: int, tenant: str) -> dict[str, object]:
    """IndexStatus fields (``watch_folders``, ``queue_depth``) for one tenant.

    Only the tenant's own folders are listed: paths of another tenant's folders are not its business.
    """
    return {
        "queue_depth": queue_depth,
        "watch_folders": [
            freki_pb2.WatchFolderStatus(
                path=f.path, files_indexed=f.files_indexed, files_pending=f.files_pending,
                skipped=[freki_pb2.SkippedFile(path=s.path, reason=s.reason, at=timestamp(s.at)) for s in f.skipped],
            )
            for f in folders
            if f.tenant_id == tenant
        ],
    }


def migration_status(status: MigrationStatus | None) -> freki_pb2.MigrationStatus | None:
    """A model migration's progress, or None when there is none."""
    if status is None:
        return None
    return freki_pb2.MigrationStatus(
        state=status.state, model_from=status.model_from, model_to=status.model_to, started_at=status.started_at,
        documents_done=status.documents_done, documents_total=status.documents_total, error=status.error,
    )


def health_fields(status: EngineStatus) -> dict[str, Any]:
    """IndexStatus's health, its reasons, the disk's state and the quarantined chunks."""
    health, reasons = status.health
    fields: dict[str, Any] = {"health": health, "health_reasons": list(reasons)}
    if (disk := status.disk) is not None:
        fields["disk"] = freki_pb2.DiskStatus(
            path=disk.path, free_bytes=disk.free_bytes, total_bytes=disk.total_bytes, level=disk.level,
            refuse_below_bytes=disk.refuse_at, warn_below_bytes=disk.warn_at)
    fields["quarantined_chunks"] = [freki_pb2.QuarantinedChunk(
        chunk_id=q.chunk_id, document_id=q.document_id, tenant_id=q.tenant_id, collection=q.collection,
        reason=q.reason, detected_at=q.detected_at, heal=q.heal) for q in status.quarantined]
    return fields
