"""Document calls of the blocking client: indexing one text, files and folders (see
:mod:`odin_client.documents`); listing, reading, deleting documents; exporting a data owner's data."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from wolf.v1 import freki_pb2

from odin_client import messages
from odin_client.batch_index import StreamUnusable, stream_index
from odin_client.connection import Connection
from odin_client.document_records import DocumentPage, DocumentRecord, export_record_to_dict, record_from_proto
from odin_client.documents import DocumentFile, discover
from odin_client.errors import DeadlineExceeded, OdinError, ServiceUnavailable
from odin_client.results import IndexResult, index_result_from_proto
from odin_client.retry import RETRY_IDEMPOTENT_READ
from odin_client.status import ReindexResult, reindex_from_proto

log = logging.getLogger("odin")
ProgressCallback = Callable[[DocumentFile, IndexResult | OdinError], None]


class DocumentCalls(Connection):
    """Putting documents into Freki."""

    def index_text(self, text: str, *, source: str, document_id: str = "", content_type: str = "",
                   metadata: Mapping[str, str] | None = None, owner_id: str = "",
                   tenant_id: str | None = None) -> IndexResult:
        """Index one text document (Freki derives the id from ``source`` when ``document_id`` is empty)."""
        request = messages.index_text_request(
            text, tenant_id=self._tenant(tenant_id), source=source, document_id=document_id,
            content_type=content_type, metadata=metadata, owner_id=owner_id,
        )
        return self._index(request)

    def _index(self, request: freki_pb2.IndexDocumentRequest) -> IndexResult:
        resp, _ = self._unary(self._freki().IndexDocument, request, service="freki", name="IndexDocument",
                              budget_s=self.settings.index_deadline_s, idempotent_read=False)
        return index_result_from_proto(resp, request.source)

    def index(self, paths: Iterable[str | os.PathLike[str]], *, metadata: Mapping[str, str] | None = None,
              tenant_id: str | None = None, on_progress: ProgressCallback | None = None,
              stop_on_error: bool = False) -> list[IndexResult | OdinError]:
        """Index files and folders (recursively); see :mod:`odin_client.documents` for formats."""
        docs, _skipped = discover(paths)
        return self.index_documents(docs, metadata=metadata, tenant_id=tenant_id, on_progress=on_progress,
                                    stop_on_error=stop_on_error)

    def index_documents(self, docs: Iterable[DocumentFile], *, metadata: Mapping[str, str] | None = None,
                        tenant_id: str | None = None, on_progress: ProgressCallback | None = None,
                        stop_on_error: bool = False) -> list[IndexResult | OdinError]:
        """Index discovered files over one IndexDocuments stream (Freki parses and embeds them side by side).

        A document Freki rejects does not stop the others unless ``stop_on_error``; its error takes
        its place in the result list. If the stream cannot be used (an older Freki, a broken connection),
        the documents still without a result are sent one call at a time, with retries; an unreachable
        Freki then stops the run (raises).

        Returns:
            One IndexResult or OdinError per document, in order.
        """
        docs = list(docs)
        results: list[IndexResult | OdinError | None] = [None] * len(docs)

        def settle(position: int, outcome: IndexResult | OdinError) -> None:
            if isinstance(outcome, OdinError) and stop_on_error:
                raise outcome
            results[position] = outcome
            if on_progress is not None:
                on_progress(docs[position], outcome)

        tenant = self._tenant(tenant_id)
        try:
            for position, streamed in stream_index(
                    self._freki().IndexDocuments, docs,
                    lambda doc: messages.index_file_request(doc, tenant_id=tenant, metadata=metadata),
                    timeout=self.settings.index_deadline_s * max(1, len(docs)), metadata=self._metadata):
                settle(position, streamed)
        except StreamUnusable as exc:
            log.info("IndexDocuments stream unusable (%s); indexing the remaining documents one by one", exc.reason)
        for position, doc in enumerate(docs):
            if results[position] is not None:
                continue
            outcome: IndexResult | OdinError
            try:
                outcome = self._index(messages.index_file_request(doc, tenant_id=tenant, metadata=metadata))
            except (ServiceUnavailable, DeadlineExceeded):
                raise
            except OdinError as exc:
                outcome = exc
            settle(position, outcome)
        return [r for r in results if r is not None]

    def list_documents(self, *, page_size: int = 100, page_token: str = "", owner_id: str = "",
                       tenant_id: str | None = None) -> DocumentPage:
        """One page of the tenant's documents (optionally one owner's), in id order."""
        request = freki_pb2.ListDocumentsRequest(tenant_id=self._tenant(tenant_id), page_size=page_size,
                                                 page_token=page_token, owner_id=owner_id)
        resp, _ = self._unary(self._freki().ListDocuments, request, service="freki", name="ListDocuments",
                              budget_s=self.settings.deadline_s, idempotent_read=True)
        return DocumentPage([record_from_proto(d) for d in resp.documents], resp.next_page_token)

    def iter_documents(self, *, owner_id: str = "", tenant_id: str | None = None,
                       page_size: int = 200) -> Iterator[DocumentRecord]:
        """Every document of the tenant (or owner), page after page."""
        token = ""
        while True:
            page = self.list_documents(page_size=page_size, page_token=token, owner_id=owner_id,
                                       tenant_id=tenant_id)
            yield from page.documents
            if not page.next_page_token:
                return
            token = page.next_page_token

    def get_document(self, document_id: str, *, tenant_id: str | None = None) -> DocumentRecord:
        """A document's record (raises NotFound when there is none)."""
        request = freki_pb2.GetDocumentRequest(tenant_id=self._tenant(tenant_id), document_id=document_id)
        resp, _ = self._unary(self._freki().GetDocument, request, service="freki", name="GetDocument",
                              budget_s=self.settings.deadline_s, idempotent_read=True)
        return record_from_proto(resp)

    def delete_document(self, document_id: str, *, tenant_id: str | None = None) -> int:
        """Delete a document and all its chunks; the number of chunks deleted (NotFound when none)."""
        request = freki_pb2.DeleteDocumentRequest(request_id=messages.new_request_id(),
                                                  tenant_id=self._tenant(tenant_id), document_id=document_id)
        resp, _ = self._unary(self._freki().DeleteDocument, request, service="freki", name="DeleteDocument",
                              budget_s=self.settings.index_deadline_s, idempotent_read=False)
        return int(resp.chunks_deleted)

    def full_reindex(self, *, document_id: str = "", migrate_model: bool = False,
                     tenant_id: str | None = None) -> ReindexResult:
        """FullReindex: re-chunk the tenant's documents (or one) from their kept sources with the current
        settings; with ``migrate_model``, start a blue/green migration of the whole index to the configured
        embedding model (it runs in the background: ``status().migration`` shows its progress)."""
        request = freki_pb2.FullReindexRequest(request_id=messages.new_request_id(), tenant_id=self._tenant(tenant_id),
                                               document_id=document_id, migrate_model=migrate_model)
        resp, _ = self._unary(self._freki().FullReindex, request, service="freki", name="FullReindex",
                              budget_s=self.settings.index_deadline_s, idempotent_read=False)
        return reindex_from_proto(resp)

    def export_owner(self, owner_id: str, *, include_vectors: bool = False,
                     tenant_id: str | None = None) -> Iterator[dict[str, Any]]:
        """GDPR export (Art. 15/20): each of the owner's documents, then its outgoing links, then its chunks, as
        JSON-ready records."""
        request = freki_pb2.ExportOwnerDataRequest(request_id=messages.new_request_id(),
                                                   tenant_id=self._tenant(tenant_id), owner_id=owner_id,
                                                   include_vectors=include_vectors)
        stub = self._freki()
        records = self.runner.stream(
            lambda timeout: stub.ExportOwnerData(request, timeout=timeout, metadata=self._metadata),
            service="freki", method="ExportOwnerData", budget_s=self.settings.index_deadline_s,
            retryable=RETRY_IDEMPOTENT_READ)
        try:
            for record in records:
                yield export_record_to_dict(record)
        finally:
            records.close()
