"""FullReindex: re-parse and re-chunk each document from its kept source with the current settings, through
the normal indexing path (one atomic commit per document). Documents without a kept source (indexed before
sources were kept, larger than ``reindex.max_source_bytes``, or ``reindex.keep_sources`` off) have their
stored chunk texts re-embedded instead, and the report says how many.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from freki.engine.index_set import IndexSet
from freki.ingest.caches import embed_in_slices
from freki.ingest.indexing import IndexInput, IndexResult, document_chunks
from freki.ingest.registry import DocumentRecord
from freki.store import ChunkPoint


@dataclass(frozen=True)
class ReindexReport:
    """What a FullReindex did."""

    documents: int
    chunks: int  # chunks embedded
    rechunked: int  # re-parsed and re-chunked from the kept source
    reembedded_only: int  # no kept source: stored chunk texts re-embedded
    note: str = ""


RunIndex = Callable[[IndexInput, str], IndexResult]  # (input, expected committed generation) -> result
# (tenant, document id) -> held while a document's stored chunks are re-embedded: the engine's write lock
# (shared) and the document's lock, so no index, delete or erasure of it runs meanwhile.
HoldDocument = Callable[[str, str], AbstractContextManager[object]]


def input_from_source(index: IndexSet, record: DocumentRecord, *, force: bool) -> IndexInput | None:
    """The index call that produced ``record``, rebuilt from its kept source; None when none was kept."""
    kept = index.sources.load(record.tenant_id, record.document_id, record.generation) if index.sources else None
    if kept is None:
        return None
    return IndexInput(tenant_id=record.tenant_id, document_id=record.document_id, data=kept.data,
                      source=kept.source, content_type=kept.content_type, owner_id=kept.owner_id,
                      metadata=kept.metadata, force_full_reindex=force,
                      access_groups=tuple(record.access_groups))


def full_reindex(index: IndexSet, records: list[DocumentRecord], run_index: RunIndex,
                 invalidate: Callable[[str], None], hold: HoldDocument) -> ReindexReport:
    """Re-chunk (or, without a kept source, re-embed) each of ``records``; a document deleted, erased or
    re-indexed since ``records`` were listed is left as it is (never written back)."""
    chunks = rechunked = only = 0
    for record in records:
        doc = input_from_source(index, record, force=True)
        if doc is not None:
            result = run_index(doc, record.generation)  # "superseded": re-indexed meanwhile, with these settings
            chunks += result.chunks_embedded
            rechunked += 1
            continue
        with hold(record.tenant_id, record.document_id):
            current = index.registry.get(record.tenant_id, record.document_id)
            if current is None or current.generation != record.generation:
                continue  # deleted or re-indexed meanwhile: its new state stands
            chunks += reembed_stored(index, record.tenant_id, record.document_id, record.embedding_model)
        only += 1
        invalidate(record.tenant_id)
    note = "" if not only else (
        f"{only} document(s) have no kept source (indexed before sources were kept, larger than "
        "reindex.max_source_bytes, or reindex.keep_sources is off): their stored chunk texts were re-embedded, "
        "not re-chunked")
    return ReindexReport(len(records), chunks, rechunked, only, note)


def reembed_stored(index: IndexSet, tenant: str, document_id: str, model: str = "") -> int:
    """Re-embed one document's stored chunk texts in place with the model that holds it (``model``, the
    standard one when that is not loaded); returns chunks embedded."""
    lane = index.indexer.router.lanes.get(model, index.indexer.router.standard)
    points = document_chunks(lane.chunks, tenant, document_id)
    vectors = embed_in_slices(lane.embedder.embed, [str(p.payload.get("content", "")) for p in points])
    sparse = index.indexer.sparse_of_points(points)
    lane.chunks.upsert([
        ChunkPoint(id=p.id, dense=v.tolist(), sparse=s, payload=p.payload)
        for p, v, s in zip(points, vectors, sparse, strict=True)
    ])
    return len(points)
