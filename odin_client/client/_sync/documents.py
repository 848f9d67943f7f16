# Generated from odin_client/client/_async/documents.py by scripts/unasync_client.py: edit the source, not this.
"""Document calls: indexing one text, files and folders (see :mod:`odin_client.protocol.files`); listing,
reading, deleting and re-indexing documents; exporting a data owner's data.

Files are indexed over one IndexDocuments stream (Freki parses and embeds them side by side); walking folders
and reading files runs off the event loop (``_offload``) in the asyncio client.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from odin_client.client._sync.calls import Calls
from odin_client.protocol import specs
from odin_client.protocol.files import DocumentFile, discover
from odin_client.protocol.index_stream import IndexBatch, ProgressCallback
from odin_client.protocol.messages import index_text_request
from odin_client.types.errors import OdinError
from odin_client.types.records import DocumentPage, DocumentRecord
from odin_client.types.status import ReindexResult
from odin_client.types.writes import IndexResult


class DocumentCalls(Calls):
    """Putting documents into Freki, and managing them there."""

    def index_text(
        self,
        text: str,
        *,
        source: str,
        document_id: str = "",
        content_type: str = "",
        metadata: Mapping[str, str] | None = None,
        owner_id: str = "",
        tenant_id: str | None = None,
    ) -> IndexResult:
        """Index one text document (Freki derives the id from ``source`` when ``document_id`` is empty)."""
        request = index_text_request(
            text,
            tenant_id=self._tenant(tenant_id),
            source=source,
            document_id=document_id,
            content_type=content_type,
            metadata=metadata,
            owner_id=owner_id,
        )
        return self._call(specs.index_document(self.settings, request))

    def index(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        metadata: Mapping[str, str] | None = None,
        tenant_id: str | None = None,
        on_progress: ProgressCallback | None = None,
        stop_on_error: bool = False,
    ) -> list[IndexResult | OdinError]:
        """Index files and folders (recursively); see :mod:`odin_client.protocol.files` for formats."""
        docs, _skipped = self._offload(discover, paths)
        return self.index_documents(
            docs, metadata=metadata, tenant_id=tenant_id, on_progress=on_progress, stop_on_error=stop_on_error
        )

    def index_documents(
        self,
        docs: Iterable[DocumentFile],
        *,
        metadata: Mapping[str, str] | None = None,
        tenant_id: str | None = None,
        on_progress: ProgressCallback | None = None,
        stop_on_error: bool = False,
    ) -> list[IndexResult | OdinError]:
        """Index discovered files over one IndexDocuments stream (Freki parses and embeds them side by side).

        A document Freki rejects does not stop the others unless ``stop_on_error``; its error takes
        its place in the result list. If the stream cannot be used (an older Freki, a broken connection),
        the documents still without a result are sent one call at a time, with retries; an unreachable
        Freki then stops the run (raises). ``on_progress`` runs as each document's outcome arrives.

        Returns:
            One IndexResult or OdinError per document, in order.
        """
        batch = IndexBatch(
            list(docs),
            tenant_id=self._tenant(tenant_id),
            metadata=metadata,
            on_progress=on_progress,
            stop_on_error=stop_on_error,
            max_request_bytes=self.settings.max_message_bytes,
        )
        self._index_stream(batch)
        for position in batch.missing():
            batch.settle(position, self._index_one(batch, position))
        return batch.results()

    def _index_one(self, batch: IndexBatch, position: int) -> IndexResult | OdinError:
        try:
            request = self._offload(batch.make_request, batch.docs[position])
            return self._call(specs.index_document(self.settings, request))
        except OdinError as exc:
            return batch.one_by_one_failed(exc)

    def list_documents(
        self, *, page_size: int = 100, page_token: str = "", owner_id: str = "", tenant_id: str | None = None
    ) -> DocumentPage:
        """One page of the tenant's documents (optionally one owner's), in id order."""
        return self._call(
            specs.list_documents(
                self.settings, page_size=page_size, page_token=page_token, owner_id=owner_id, tenant_id=tenant_id
            )
        )

    def iter_documents(
        self, *, owner_id: str = "", tenant_id: str | None = None, page_size: int = 200
    ) -> Iterator[DocumentRecord]:
        """Every document of the tenant (or owner), page after page."""
        token = ""
        while True:
            page = self.list_documents(page_size=page_size, page_token=token, owner_id=owner_id, tenant_id=tenant_id)
            for record in page.documents:
                yield record
            if not page.next_page_token:
                return
            token = page.next_page_token

    def get_document(self, document_id: str, *, tenant_id: str | None = None) -> DocumentRecord:
        """A document's record (raises NotFound when there is none)."""
        return self._call(specs.get_document(self.settings, document_id, tenant_id=tenant_id))

    def delete_document(self, document_id: str, *, tenant_id: str | None = None) -> int:
        """Delete a document and all its chunks; the number of chunks deleted (NotFound when none)."""
        return self._call(specs.delete_document(self.settings, document_id, tenant_id=tenant_id))

    def full_reindex(
        self, *, document_id: str = "", migrate_model: bool = False, tenant_id: str | None = None
    ) -> ReindexResult:
        """FullReindex: re-chunk the tenant's documents (or one) from their kept sources with the current
        settings; with ``migrate_model``, start a blue/green migration of the whole index to the configured
        embedding model (it runs in the background: ``status().migration`` shows its progress)."""
        return self._call(
            specs.full_reindex(self.settings, document_id=document_id, migrate_model=migrate_model, tenant_id=tenant_id)
        )

    def export_owner(
        self, owner_id: str, *, include_vectors: bool = False, tenant_id: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """GDPR export (Art. 15/20): each of the owner's documents, then its outgoing links, then its chunks, as
        JSON-ready records. The call starts at the first record asked for; a consumer that stops early should
        close the iterator (``contextlib.aclosing`` in asyncio) to cancel it at once."""
        return self._stream_call(
            specs.export_owner(self.settings, owner_id, include_vectors=include_vectors, tenant_id=tenant_id)
        )
