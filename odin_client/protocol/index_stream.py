"""Indexing many files over Freki's IndexDocuments stream (one call, results in order).

Each connection's ``_index_stream`` (:mod:`odin_client.client`) sends one request per document of an
:class:`IndexBatch` (built lazily, so a large folder is never held in memory) and settles each document's
``IndexResult | OdinError`` as Freki answers. A document Freki refuses becomes an OdinError in its place. If
the stream cannot be used — an older Freki without IndexDocuments, the stream breaks, or a result does not
carry the next document's request_id (out of order, one too many) — ``unusable`` logs why and they stop; the caller
indexes ``batch.missing()`` one call at a time (with retries). Indexing is idempotent (an unchanged
document is a no-op), so re-sending is safe. The stream bookkeeping both share is
:class:`IndexStream`; the outcomes, progress and ``stop_on_error`` are :class:`IndexBatch`'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence

import grpc
from wolf.v1 import freki_pb2

from odin_client.protocol import messages
from odin_client.protocol.files import DocumentFile
from odin_client.types.errors import (
    DeadlineExceeded,
    InvalidRequest,
    OdinError,
    ServiceUnavailable,
    from_rpc_error,
    from_status,
    status_of,
)
from odin_client.types.writes import IndexResult, index_result_from_proto

log = logging.getLogger("odin")

# Statuses of the whole stream that per-document calls would meet again: raised, not retried one by one.
_FINAL = {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED}

Outcome = IndexResult | OdinError
MakeRequest = Callable[[DocumentFile], freki_pb2.IndexDocumentRequest]
ProgressCallback = Callable[[DocumentFile, Outcome], None]


def built(make_request: MakeRequest, doc: DocumentFile) -> freki_pb2.IndexDocumentRequest | OdinError:
    """The document's request, or the error that kept it from being built (e.g. an unreadable file)."""
    try:
        return make_request(doc)
    except OdinError as exc:
        return exc


class StreamMismatch(Exception):
    """A streamed result that is not the next document's (out of order, or one too many): the stream is not used
    further, so no result is pinned on the wrong document."""


class IndexStream:
    """Which document each streamed result belongs to: results come in the order requests were sent, and
    documents that could not even be read are never sent (their error takes their place)."""

    def __init__(self, docs: Sequence[DocumentFile]) -> None:
        self.docs = docs
        self._sent: deque[tuple[int, str]] = deque()  # (position, request_id), appended before grpc gets it
        self._local: dict[int, OdinError] = {}
        self._next = 0

    def admit(self, position: int,
              request: freki_pb2.IndexDocumentRequest | OdinError) -> freki_pb2.IndexDocumentRequest | None:
        """The request to send for document ``position``, or None when it failed locally (kept as its outcome)."""
        if isinstance(request, OdinError):
            self._local[position] = request
            return None
        self._sent.append((position, request.request_id))
        return request

    def received(self, result: freki_pb2.IndexDocumentsResult) -> list[tuple[int, Outcome]]:
        """Outcomes settled by one streamed result: unread documents before it, in order, then its own."""
        if not self._sent:
            raise StreamMismatch(f"a result (request_id {result.request_id!r}) came for no document sent")
        position, request_id = self._sent[0]
        if result.request_id and result.request_id != request_id:
            raise StreamMismatch(f"the result for {self.docs[position].source} carried request_id "
                                 f"{result.request_id!r}, not {request_id!r}")
        self._sent.popleft()
        settled: list[tuple[int, Outcome]] = [(p, self._local[p]) for p in range(self._next, position)]
        self._next = position + 1
        return [*settled, (position, _outcome(result, self.docs[position]))]

    def broke(self, exc: grpc.RpcError) -> None:
        """The stream failed: raise what per-document calls would meet too, else log (the caller goes on)."""
        code, details = status_of(exc)
        if code in _FINAL:
            raise from_rpc_error(exc, service="freki", method="IndexDocuments", attempts=1) from exc
        unusable(f"{code.name}: {details}")

    def ended(self) -> list[tuple[int, Outcome]]:
        """The stream ended: the unread documents after the last result — none when a sent one lacks its
        result (all of them are then left to the caller)."""
        rest = range(self._next, len(self.docs))
        if any(p not in self._local for p in rest):
            unusable("the stream ended before every document had its result")
            return []
        return [(p, self._local[p]) for p in rest]


def unusable(reason: str) -> None:
    log.info("IndexDocuments stream unusable (%s); indexing the remaining documents one by one", reason)


class IndexBatch:
    """The documents of one ``index_documents`` call and their outcomes, in order; progress and
    ``stop_on_error`` applied as each outcome settles."""

    def __init__(self, docs: Sequence[DocumentFile], *, tenant_id: str, metadata: Mapping[str, str] | None,
                 on_progress: ProgressCallback | None, stop_on_error: bool, max_request_bytes: int) -> None:
        self.docs = docs
        self.tenant_id, self.metadata = tenant_id, metadata
        self.max_request_bytes = max_request_bytes
        self._results: list[Outcome | None] = [None] * len(docs)
        self._on_progress = on_progress
        self._stop_on_error = stop_on_error

    def make_request(self, doc: DocumentFile) -> freki_pb2.IndexDocumentRequest:
        """A document's IndexDocument request (reads the file: InvalidRequest when it cannot, or when the request
        would exceed ``max_request_bytes``: gRPC would refuse to send it and fail the whole stream with it)."""
        if doc.content is None:
            with contextlib.suppress(OSError):  # an unreadable file: read_document says why
                self._check_size(doc, doc.path.stat().st_size)  # a huge file is refused before it is read
        request = messages.index_file_request(doc, tenant_id=self.tenant_id, metadata=self.metadata)
        self._check_size(doc, request.ByteSize())
        return request

    def _check_size(self, doc: DocumentFile, size: int) -> None:
        if size > self.max_request_bytes:
            raise InvalidRequest(
                f"{doc.source}: the document's request is {size:,} bytes; the limit is {self.max_request_bytes:,} "
                "(ODIN_MAX_MESSAGE_BYTES, which must not exceed the server's max_message_bytes, 64 MiB by default; "
                "Freki refuses documents over FREKI_MAX_DOCUMENT_BYTES)", code=grpc.StatusCode.RESOURCE_EXHAUSTED,
                details=f"request of {size} bytes over the limit of {self.max_request_bytes}")

    def stream_timeout(self, index_deadline_s: float) -> float:
        """The whole stream's deadline: one document's budget per document."""
        return index_deadline_s * max(1, len(self.docs))

    def settle(self, position: int, outcome: Outcome) -> None:
        """Record one document's outcome (raises it when it is an error and ``stop_on_error``)."""
        if isinstance(outcome, OdinError) and self._stop_on_error:
            raise outcome
        self._results[position] = outcome
        if self._on_progress is not None:
            self._on_progress(self.docs[position], outcome)

    def settle_all(self, outcomes: Iterable[tuple[int, Outcome]]) -> None:
        """Settle ``(position, outcome)`` pairs in order."""
        for position, outcome in outcomes:
            self.settle(position, outcome)

    def missing(self) -> list[int]:
        """Documents still without an outcome (to index one call at a time)."""
        return [p for p, r in enumerate(self._results) if r is None]

    @staticmethod
    def one_by_one_failed(exc: OdinError) -> OdinError:
        """A single call's error as the document's outcome — but an unreachable Freki stops the run (raised)."""
        if isinstance(exc, ServiceUnavailable | DeadlineExceeded):
            raise exc
        return exc

    def results(self) -> list[Outcome]:
        """Every outcome so far, in document order."""
        return [r for r in self._results if r is not None]


def _outcome(result: freki_pb2.IndexDocumentsResult, doc: DocumentFile) -> Outcome:
    if result.HasField("response"):
        return index_result_from_proto(result.response, doc.source)
    code = getattr(grpc.StatusCode, result.error_code, grpc.StatusCode.UNKNOWN)
    return from_status(code, result.error_message, service="freki", method="IndexDocument")
