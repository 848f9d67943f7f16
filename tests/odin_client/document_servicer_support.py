"""A controllable Freki (see :mod:`tests.odin_client.servicers_support`) that also answers the document, graph,
embedding, re-index and export calls from canned data — the seam for the clients' retry, error and parity tests (the
real Freki behind the same calls is in ``test_aio_real_freki.py``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
from wolf.v1 import common_pb2, freki_pb2

from tests.odin_client.servicers_support import ControlledFreki

DOCS = [freki_pb2.DocumentInfo(document_id=f"doc-{i}", tenant_id="default", source=f"notes/{i}.md",
                               content_type="markdown", chunk_count=i + 1, metadata={"n": str(i)})
        for i in range(5)]


class DocumentFreki(ControlledFreki):
    """Five canned documents, pages by offset; ExportOwnerData sends a document, its links, then its chunks
    (``export_break_after`` > 0: the stream then blocks until ``release`` and the test stops the server)."""

    def __init__(self) -> None:
        super().__init__()
        self.export_break_after = 0
        self.release = threading.Event()
        self.blocked = threading.Event()

    def ListDocuments(self, request: freki_pb2.ListDocumentsRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("ListDocuments", request, context)
        start = int(request.page_token or 0)
        end = start + (request.page_size or 100)
        return freki_pb2.ListDocumentsResponse(documents=DOCS[start:end],
                                               next_page_token=str(end) if end < len(DOCS) else "")

    def GetDocument(self, request: freki_pb2.GetDocumentRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("GetDocument", request, context)
        for doc in DOCS:
            if doc.document_id == request.document_id:
                return doc
        context.abort(grpc.StatusCode.NOT_FOUND, f"document {request.document_id!r} does not exist")

    def DeleteDocument(self, request: freki_pb2.DeleteDocumentRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("DeleteDocument", request, context)
        return freki_pb2.DeleteDocumentResponse(request_id=request.request_id, document_id=request.document_id,
                                                chunks_deleted=3)

    def FullReindex(self, request: freki_pb2.FullReindexRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("FullReindex", request, context)
        return freki_pb2.FullReindexResponse(request_id=request.request_id, documents_reindexed=2, chunks_embedded=4,
                                             documents_rechunked=1, documents_reembedded_only=1, note="canned")

    def Embed(self, request: freki_pb2.EmbedRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("Embed", request, context)
        return freki_pb2.EmbedResponse(
            embeddings=[freki_pb2.Embedding(values=[float(len(t)), 0.5]) for t in request.texts], model="canned",
            dimension=2, prompt_tokens=len(request.texts))

    def ListLinks(self, request: freki_pb2.LinkListRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("ListLinks", request, context)
        edge = common_pb2.GraphEdge(source_document_id=request.document_id, target="Other", kind="references")
        return freki_pb2.LinkListResponse(document_id=request.document_id, outgoing=[edge])

    def RecordFeedback(self, request: freki_pb2.FeedbackRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("RecordFeedback", request, context)
        return freki_pb2.FeedbackResponse(request_id=request.request_id, query_id=request.query_id,
                                          rating=request.rating)

    def ExportOwnerData(self, request: freki_pb2.ExportOwnerDataRequest,  # noqa: N802
                        context: grpc.ServicerContext) -> Iterator[Any]:
        self.rec.enter("ExportOwnerData", request, context)
        records = [freki_pb2.ExportRecord(document=DOCS[0]),
                   freki_pb2.ExportRecord(links=freki_pb2.ExportedLinks(document_id="doc-0")),
                   freki_pb2.ExportRecord(chunk=freki_pb2.ExportedChunk(document_id="doc-0", content="text"))]
        for i, record in enumerate(records, 1):
            yield record
            if i == self.export_break_after:
                self.blocked.set()
                self.release.wait(10)
                return
