"""Conversions between protobuf messages and Freki's domain objects."""

from __future__ import annotations

from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp
from wolf.v1 import common_pb2, freki_pb2

from freki.documents import DocumentRecord
from freki.indexing import IndexResult
from freki.retrieval import Hit, Query, metadata_filter
from freki.settings import FrekiSettings
from freki.validation import tenant_of

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


def iso_timestamp(value: str) -> Timestamp:
    """An ISO-8601 string as a protobuf Timestamp (empty when unparsable)."""
    ts = Timestamp()
    try:
        ts.FromDatetime(datetime.fromisoformat(value))
    except (TypeError, ValueError):
        pass
    return ts


def query_from_request(request: common_pb2.WolfRequest, settings: FrekiSettings, default_mode: str) -> Query:
    """Apply server defaults to a validated RetrieveContext request."""
    opts = request.retrieval
    return Query(
        tenant_id=tenant_of(request.tenant_id, settings),
        text=request.prompt,
        top_k=opts.top_k or settings.retrieval.top_k,
        score_threshold=(
            opts.score_threshold if opts.HasField("score_threshold") else settings.retrieval.score_threshold
        ),
        filters=tuple(metadata_filter(f.key, list(f.values), f.exclude) for f in opts.filters),
        document_ids=tuple(opts.document_ids),
        variants=tuple(opts.query_variants),
        mode=SEARCH_MODES.get(opts.mode, default_mode),
        mmr_diversity=opts.mmr_diversity if opts.HasField("mmr_diversity") else None,
        rerank=opts.rerank,
    )


def retrieved_document(hit: Hit) -> common_pb2.RetrievedDocument:
    """A search hit as the RetrievedDocument clients see."""
    payload = hit.payload
    metadata = {str(k): str(v) for k, v in (payload.get("metadata") or {}).items()}
    metadata.setdefault("source", str(payload.get("source", "")))
    metadata.setdefault("content_type", str(payload.get("source_type", "")))
    return common_pb2.RetrievedDocument(
        document_id=hit.document_id,
        content=hit.content,
        relevance_score=hit.score,
        metadata=metadata,
        chunk_id=hit.chunk_id,
        chunk_index=int(payload.get("chunk_index", 0)),
        source=str(payload.get("source", "")),
    )


def rag_context(hits: list[Hit]) -> common_pb2.RAGContext:
    """Hits as a RAGContext whose retrieval_score is the mean relevance."""
    docs = [retrieved_document(h) for h in hits]
    mean = sum(h.score for h in hits) / len(hits) if hits else 0.0
    return common_pb2.RAGContext(documents=docs, retrieval_score=mean)


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
        metadata=record.metadata,
        indexed_at=iso_timestamp(record.indexed_at),
        embedding_model=record.embedding_model,
    )


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
