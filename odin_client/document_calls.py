"""Indexing calls of the blocking client: one text, files and folders (see :mod:`odin_client.documents`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from wolf.v1 import freki_pb2

from odin_client import messages
from odin_client.connection import Connection
from odin_client.documents import DocumentFile, discover
from odin_client.errors import DeadlineExceeded, OdinError, ServiceUnavailable
from odin_client.results import IndexResult, index_result_from_proto

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
        """Index discovered files one by one.

        A document Freki rejects does not stop the others unless ``stop_on_error``; its error takes
        its place in the result list. An unreachable Freki always stops the run (raises).

        Returns:
            One IndexResult or OdinError per document, in order.
        """
        results: list[IndexResult | OdinError] = []
        for doc in docs:
            outcome: IndexResult | OdinError
            try:
                request = messages.index_file_request(
                    doc, tenant_id=self._tenant(tenant_id), metadata=metadata
                )
                outcome = self._index(request)
            except (ServiceUnavailable, DeadlineExceeded):
                raise
            except OdinError as exc:
                if stop_on_error:
                    raise
                outcome = exc
            results.append(outcome)
            if on_progress is not None:
                on_progress(doc, outcome)
        return results
