"""Document calls of the asyncio client (the twin of :mod:`odin_client.client._sync.documents`): indexing one text
or many files, listing, reading, deleting documents, re-indexing, exporting a data owner's data.

``index(paths)`` is not here: walking folders belongs to the blocking client and the CLI (see
:mod:`odin_client.client._async.client`). ``index_documents`` takes the
:class:`~odin_client.protocol.files.DocumentFile` objects a ``discover`` found and streams them like the blocking
client does, reading each file in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from wolf.v1 import freki_pb2

from odin_client.client.async_connection import AsyncConnection
from odin_client.protocol import messages
from odin_client.protocol import specs as call_specs
from odin_client.protocol.files import DocumentFile
from odin_client.protocol.index_stream import IndexBatch, ProgressCallback, stream_index_async
from odin_client.types.errors import OdinError
from odin_client.types.records import DocumentPage, DocumentRecord
from odin_client.types.results import IndexResult
from odin_client.types.status import ReindexResult


class AsyncDocumentCalls(AsyncConnection):
    """Putting documents into Freki, and managing them there."""

    async def index_text(self, text: str, *, source: str, document_id: str = "", content_type: str = "",
                         metadata: Mapping[str, str] | None = None, owner_id: str = "",
                         tenant_id: str | None = None) -> IndexResult:
        """Index one text document (Freki derives the id from ``source`` when ``document_id`` is empty)."""
        request = messages.index_text_request(
            text, tenant_id=self._tenant(tenant_id), source=source, document_id=document_id,
            content_type=content_type, metadata=metadata, owner_id=owner_id,
        )
        return await self._index(request)

    async def _index(self, request: freki_pb2.IndexDocumentRequest) -> IndexResult:
        return await self._call(call_specs.index_document(self.settings, request))

    async def index_documents(self, docs: Iterable[DocumentFile], *, metadata: Mapping[str, str] | None = None,
                              tenant_id: str | None = None, on_progress: ProgressCallback | None = None,
                              stop_on_error: bool = False) -> list[IndexResult | OdinError]:
        """Index files over one IndexDocuments stream: results, errors in place, ``stop_on_error`` and the
        one-call-at-a-time fallback exactly as :meth:`OdinClient.index_documents`; ``on_progress`` runs in the
        event loop as each document's outcome arrives."""
        batch = IndexBatch(list(docs), tenant_id=self._tenant(tenant_id), metadata=metadata,
                           on_progress=on_progress, stop_on_error=stop_on_error,
                           max_request_bytes=self.settings.max_message_bytes)
        try:
            await stream_index_async(self._freki().IndexDocuments, batch,
                                     timeout=batch.stream_timeout(self.settings.index_deadline_s),
                                     metadata=self._metadata)
        except asyncio.CancelledError as exc:
            raise self._closed_under(exc) from None
        for position in batch.missing():
            batch.settle(position, await self._index_one(batch, position))
        return batch.results()

    async def _index_one(self, batch: IndexBatch, position: int) -> IndexResult | OdinError:
        try:
            return await self._index(await asyncio.to_thread(batch.make_request, batch.docs[position]))
        except OdinError as exc:
            return batch.one_by_one_failed(exc)

    async def list_documents(self, *, page_size: int = 100, page_token: str = "", owner_id: str = "",
                             tenant_id: str | None = None) -> DocumentPage:
        """One page of the tenant's documents (optionally one owner's), in id order."""
        return await self._call(call_specs.list_documents(self.settings, page_size=page_size, page_token=page_token,
                                                          owner_id=owner_id, tenant_id=tenant_id))

    async def iter_documents(self, *, owner_id: str = "", tenant_id: str | None = None,
                             page_size: int = 200) -> AsyncIterator[DocumentRecord]:
        """Every document of the tenant (or owner), page after page (``async for``)."""
        token = ""
        while True:
            page = await self.list_documents(page_size=page_size, page_token=token, owner_id=owner_id,
                                             tenant_id=tenant_id)
            for record in page.documents:
                yield record
            if not page.next_page_token:
                return
            token = page.next_page_token

    async def get_document(self, document_id: str, *, tenant_id: str | None = None) -> DocumentRecord:
        """A document's record (raises NotFound when there is none)."""
        return await self._call(call_specs.get_document(self.settings, document_id, tenant_id=tenant_id))

    async def delete_document(self, document_id: str, *, tenant_id: str | None = None) -> int:
        """Delete a document and all its chunks; the number of chunks deleted (NotFound when none)."""
        return await self._call(call_specs.delete_document(self.settings, document_id, tenant_id=tenant_id))

    async def full_reindex(self, *, document_id: str = "", migrate_model: bool = False,
                           tenant_id: str | None = None) -> ReindexResult:
        """FullReindex (see :meth:`OdinClient.full_reindex`): re-chunk the tenant's documents (or one) from their
        kept sources, or with ``migrate_model`` start a blue/green migration to the configured model."""
        return await self._call(call_specs.full_reindex(self.settings, document_id=document_id,
                                                        migrate_model=migrate_model, tenant_id=tenant_id))

    def export_owner(self, owner_id: str, *, include_vectors: bool = False,
                     tenant_id: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """GDPR export (Art. 15/20), ``async for``: each of the owner's documents, then its outgoing links, then
        its chunks, as JSON-ready records. The call starts at the first record asked for; a consumer that
        stops early should ``aclose()`` the iterator (``contextlib.aclosing``) to cancel it at once."""
        return self._stream_call(call_specs.export_owner(self.settings, owner_id, include_vectors=include_vectors,
                                                         tenant_id=tenant_id))
