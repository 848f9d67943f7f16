"""FrekiService gRPC servicer: validates, calls the engine, converts. No business logic here.

Errors are raised as domain exceptions and mapped to status codes by
``wolf_service.error_mapping.ErrorMappingInterceptor``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import grpc
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki import gdpr
from freki.api import access, backups, convert, graph, validation
from freki.api.batch import index_stream
from freki.embed.remote_client import caller_deadline
from freki.engine import FrekiEngine
from freki.engine.status import tenant_view, visible_counts
from freki.ingest.deadline import Deadline, StopSignal
from freki.ingest.indexing import IndexInput
from freki.settings import FrekiSettings
from freki.store.access import visible_to
from wolf_service.errors import InvalidArgument, PermissionDenied

if TYPE_CHECKING:
    from freki.backup.retention import Retention
    from freki.watch.watcher import Watcher

log = logging.getLogger("freki.service")

MAX_PAGE_SIZE = 1000


class FrekiServicer(freki_pb2_grpc.FrekiServiceServicer):
    """Implements every FrekiService RPC on top of a :class:`FrekiEngine`."""

    def __init__(self, engine: FrekiEngine, settings: FrekiSettings, *, watcher: Watcher | None = None) -> None:
        self.engine = engine
        # Erasure tells the folder watcher, so an erased file still in a watched folder stays out.
        self.watcher = watcher
        self.settings = settings
        self.default_mode = settings.retrieval.default_mode
        self.retention: Retention | None = None  # set by build_server: the policies' status in GetIndexStatus
        self.store_problem: str | None = None  # set by the server's store probe (freki.engine.health.StoreProbe)

    def _tenant(self, tenant_id: str) -> str:
        return validation.tenant_of(tenant_id, self.settings)

    def IndexDocument(
        self, request: freki_pb2.IndexDocumentRequest, context: grpc.ServicerContext
    ) -> freki_pb2.IndexDocumentResponse:
        return self._index_one(request, call_deadline(context), access.caller_access(context, self.settings))

    def IndexDocuments(
        self, requests: Iterator[freki_pb2.IndexDocumentRequest], context: grpc.ServicerContext
    ) -> Iterator[freki_pb2.IndexDocumentsResult]:
        deadline = call_deadline(context)
        caller = access.caller_access(context, self.settings)
        yield from index_stream(requests, lambda r: self._index_one(r, deadline, caller),
                                self.settings.limits.batch_parallel)

    def _index_one(
        self, request: freki_pb2.IndexDocumentRequest, deadline: Deadline, caller: access.Access
    ) -> freki_pb2.IndexDocumentResponse:
        validation.validate_index(request, self.settings)
        tenant, document_id = self._tenant(request.tenant_id), request.document_id or request.source
        groups = access.requested_groups(request, self.settings)
        guard = access.check_write(self.engine, caller, tenant, document_id, groups)
        result = self.engine.index(IndexInput(
            tenant_id=tenant,
            document_id=document_id,
            data=request.content_bytes if request.content_bytes else request.content,
            source=request.source,
            content_type=request.content_type,
            owner_id=request.owner_id,
            metadata=validation.request_metadata(request),
            force_full_reindex=request.force_full_reindex,
            access_groups=groups,
        ), deadline, guard=guard)
        return convert.index_response(request.request_id, result)

    def RetrieveContext(
        self, request: common_pb2.WolfRequest, context: grpc.ServicerContext
    ) -> common_pb2.WolfResponse:
        started = time.perf_counter()
        validation.validate_retrieve(request, self.settings)
        query = convert.query_from_request(request, self.settings, self.default_mode,
                                           access.caller_access(context, self.settings).groups)
        # Read before the search: a write landing during it moves the epoch on, so this context is never
        # labelled with an epoch newer than its content.
        epoch = self.engine.results.epoch(query.tenant_id)
        with caller_deadline(call_deadline(context).remaining()):  # bounds a server model's requests
            hits = self.engine.retrieve(query)
        reranked = query.rerank and self.engine.retriever.reranker is not None
        found = convert.rag_context(hits, query.score_threshold, queries=[query.text, *query.variants],
                                    reranked=reranked, index_epoch=epoch)
        took_ms = int((time.perf_counter() - started) * 1000)
        search_log = self.engine.graph.search_log
        if search_log.enabled:
            search_log.record(query.tenant_id, found.query_id, query.text,
                              [(h.document_id, h.chunk_id, h.score) for h in hits if not h.neighbour_of],
                              mode=query.mode, took_ms=took_ms, owner_id=request.metadata.owner_id)
        return common_pb2.WolfResponse(
            request_id=request.request_id,
            model_type=common_pb2.RAG,
            rag_context=found,
            metadata=common_pb2.ResponseMetadata(timestamp=convert.now_timestamp(), duration_ms=took_ms),
        )

    def Embed(self, request: freki_pb2.EmbedRequest, context: grpc.ServicerContext) -> freki_pb2.EmbedResponse:
        validation.require_request_id(request.request_id)
        validation.validate_embed(request, self.settings)
        embedder = self.engine.embedder
        with caller_deadline(call_deadline(context).remaining()):
            vectors = embedder.embed(list(request.texts), urgent=True)
        tokens = sum(min(embedder.window_tokens(t), embedder.max_seq_length) for t in request.texts)
        return freki_pb2.EmbedResponse(
            request_id=request.request_id, model=embedder.identity.name, dimension=embedder.dimension,
            embeddings=[freki_pb2.Embedding(values=v.tolist()) for v in vectors], prompt_tokens=tokens)

    def DeleteDocument(
        self, request: freki_pb2.DeleteDocumentRequest, context: grpc.ServicerContext
    ) -> freki_pb2.DeleteDocumentResponse:
        validation.require_request_id(request.request_id)
        doc_id = validation.require_document_id(request.document_id)
        guard = access.check_delete(self.engine, access.caller_access(context, self.settings),
                                    self._tenant(request.tenant_id), doc_id)
        deleted = gdpr.erase_document(self.engine, self._tenant(request.tenant_id), doc_id, watcher=self.watcher,
                                      guard=guard)
        return freki_pb2.DeleteDocumentResponse(
            request_id=request.request_id, document_id=doc_id, chunks_deleted=deleted
        )

    def GetDocument(
        self, request: freki_pb2.GetDocumentRequest, context: grpc.ServicerContext
    ) -> freki_pb2.DocumentInfo:
        doc_id = validation.require_document_id(request.document_id)
        groups = access.caller_access(context, self.settings).groups
        return convert.document_info(self.engine.get_document(self._tenant(request.tenant_id), doc_id, groups))

    def ListDocuments(
        self, request: freki_pb2.ListDocumentsRequest, context: grpc.ServicerContext
    ) -> freki_pb2.ListDocumentsResponse:
        if request.page_size < 0 or request.page_size > MAX_PAGE_SIZE:
            raise InvalidArgument(f"page_size must be between 0 (= 100) and {MAX_PAGE_SIZE} (got {request.page_size})")
        records, next_offset = self.engine.registry.page(
            self._tenant(request.tenant_id),
            owner_id=request.owner_id,
            limit=request.page_size or 100,
            offset=validation.validate_page_token(request.page_token),
            visible=visible_to(access.caller_access(context, self.settings).groups),
        )
        return freki_pb2.ListDocumentsResponse(
            documents=[convert.document_info(r) for r in records], next_page_token=next_offset or ""
        )

    def GetIndexStatus(
        self, request: freki_pb2.GetIndexStatusRequest, context: grpc.ServicerContext
    ) -> freki_pb2.IndexStatus:
        status_tenant = self._tenant(request.tenant_id)
        status = self.engine.status(status_tenant)
        if self.store_problem:
            status = replace(status, store_problem=self.store_problem)
        caller = access.caller_access(context, self.settings)
        if caller.groups is not None:  # counts of what the key may read, not of the hidden documents
            status = visible_counts(status, self.engine.registry, status_tenant, caller.groups)
        elif not caller.operator:
            status = tenant_view(status)
        return freki_pb2.IndexStatus(
            document_count=status.document_count,
            chunk_count=status.chunk_count,
            embedding_model=status.embedding_model,
            embedding_dimension=status.embedding_dimension,
            store_backend=status.store_backend,
            collection=status.collection,
            embedding_models=convert.model_statuses(status.models),
            configured_embedding_model=status.configured_model,
            migration=convert.migration_status(status.migration),
            **convert.health_fields(status),
            retention=backups.retention_status(self.retention),
            **(convert.watch_status_fields(*self.watcher.status(), status_tenant) if self.watcher else {}),
        )

    def FullReindex(
        self, request: freki_pb2.FullReindexRequest, context: grpc.ServicerContext
    ) -> freki_pb2.FullReindexResponse:
        started = time.perf_counter()
        validation.require_request_id(request.request_id)
        caller = access.caller_access(context, self.settings)
        if request.migrate_model:
            access.check_whole_store(caller, "a model migration re-embeds every document")
            migration = self.engine.blue_green.start()
            return freki_pb2.FullReindexResponse(
                request_id=request.request_id, migration=convert.migration_status(migration),
                note=f"migrating every tenant's documents from {migration.model_from!r} to {migration.model_to!r} "
                     "in the background; progress in GetIndexStatus",
                duration_ms=int((time.perf_counter() - started) * 1000),
            )
        if request.document_id:
            validation.require_document_id(request.document_id)
        access.check_reindex(self.engine, caller, self._tenant(request.tenant_id), request.document_id)
        report = self.engine.full_reindex(self._tenant(request.tenant_id), request.document_id)
        return freki_pb2.FullReindexResponse(
            request_id=request.request_id, documents_reindexed=report.documents, chunks_embedded=report.chunks,
            documents_rechunked=report.rechunked, documents_reembedded_only=report.reembedded_only,
            note=report.note, duration_ms=int((time.perf_counter() - started) * 1000),
        )

    def DeleteOwnerData(
        self, request: freki_pb2.DeleteOwnerDataRequest, context: grpc.ServicerContext
    ) -> freki_pb2.DeleteOwnerDataResponse:
        validation.require_request_id(request.request_id)
        owner = _require_owner(request.owner_id)
        caller = access.caller_access(context, self.settings)
        if caller.restricted:  # an erasure must reach every document of the owner, hidden ones included
            raise PermissionDenied(f"API key {caller.key_name!r} has access_groups; erasing a data owner needs a "
                                   "key without them (it reaches every document of the owner)")
        erased = gdpr.erase_owner(self.engine, self._tenant(request.tenant_id), owner, watcher=self.watcher)
        docs, chunks = erased.documents, erased.chunks
        return freki_pb2.DeleteOwnerDataResponse(
            request_id=request.request_id, documents_deleted=docs, chunks_deleted=chunks
        )

    def CreateBackup(
        self, request: freki_pb2.CreateBackupRequest, context: grpc.ServicerContext
    ) -> freki_pb2.CreateBackupResponse:
        validation.require_request_id(request.request_id)
        access.check_whole_store(access.caller_access(context, self.settings), "a backup copies every document")
        return backups.backup(self.engine, self.settings, request)

    def ExportOwnerData(
        self, request: freki_pb2.ExportOwnerDataRequest, context: grpc.ServicerContext
    ) -> Iterator[freki_pb2.ExportRecord]:
        validation.require_request_id(request.request_id)
        owner = _require_owner(request.owner_id)
        tenant = self._tenant(request.tenant_id)
        groups = access.caller_access(context, self.settings).groups
        # Every kept link of a document (indexing keeps at most graph.max_links_per_document of them).
        limit = max(self.settings.graph.max_links_per_document, 1)
        yield from convert.export_records(
            self.engine.export_owner(tenant, owner, with_vectors=request.include_vectors, visible=visible_to(groups)),
            links_of=lambda doc_id: self.engine.graph.outgoing_links(tenant, doc_id, limit, visible_to(groups)),
        )
        for entry in access.visible_searches(self.engine, tenant, groups,
                                             self.engine.graph.search_log.entries(tenant, owner)):
            yield freki_pb2.ExportRecord(search=convert.search_log_entry(entry))

    def ListLinks(
        self, request: freki_pb2.LinkListRequest, context: grpc.ServicerContext
    ) -> freki_pb2.LinkListResponse:
        return graph.list_links(self.engine, self._tenant(request.tenant_id), request,
                                access.caller_access(context, self.settings).groups)

    def RecordFeedback(
        self, request: freki_pb2.FeedbackRequest, context: grpc.ServicerContext
    ) -> freki_pb2.FeedbackResponse:
        return graph.record_feedback(self.engine, self._tenant(request.tenant_id), request, self.settings)


def call_deadline(context: grpc.ServicerContext) -> Deadline:
    """The client's deadline for this call, also stopped when the call ends early (cancelled, or the server
    cancels in-flight calls at the end of its shutdown grace)."""
    ended = StopSignal()
    context.add_callback(ended.set)
    remaining = context.time_remaining()
    # grpcio reports "no deadline" as a huge number of seconds.
    timeout = remaining if remaining is not None and remaining < 10**7 else None
    return Deadline(timeout, stops=[(ended, "the call was cancelled")])


def _require_owner(owner_id: str) -> str:
    if not owner_id:
        raise InvalidArgument("owner_id must be non-empty: erasure and export act on one data owner")
    return owner_id
