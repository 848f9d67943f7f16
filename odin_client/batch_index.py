"""Indexing many files over Freki's IndexDocuments stream (one call, results in order).

``stream_index`` sends one request per document (built lazily, so a large folder is never held in memory)
and yields ``(position, IndexResult | OdinError)`` as Freki answers. A document Freki refuses becomes an
OdinError in its place. If the stream cannot be used — an older Freki without IndexDocuments, or the
stream breaks — ``StreamUnusable`` says how far it got, and the caller indexes the rest one call at a time
(with retries). Indexing is idempotent (an unchanged document is a no-op), so re-sending is safe.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc
from wolf.v1 import freki_pb2

from odin_client.documents import DocumentFile
from odin_client.errors import OdinError, from_rpc_error, from_status, status_of
from odin_client.results import IndexResult, index_result_from_proto

# Statuses of the whole stream that per-document calls would meet again: raised, not retried one by one.
_FINAL = {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED}


class StreamUnusable(Exception):
    """The stream ended before every document had its result; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def stream_index(
    call: Callable[..., Any], docs: Sequence[DocumentFile],
    make_request: Callable[[DocumentFile], freki_pb2.IndexDocumentRequest], *, timeout: float,
    metadata: Sequence[tuple[str, str]],
) -> Iterator[tuple[int, IndexResult | OdinError]]:
    """Yield each document's position and outcome, in order (see the module docstring)."""
    sent: queue.SimpleQueue[int] = queue.SimpleQueue()
    local: dict[int, OdinError] = {}  # documents that could not even be read: never sent

    def requests() -> Iterator[freki_pb2.IndexDocumentRequest]:
        for i, doc in enumerate(docs):
            try:
                request = make_request(doc)
            except OdinError as exc:
                local[i] = exc
                continue
            sent.put(i)
            yield request

    responses = call(requests(), timeout=timeout, metadata=metadata)
    next_doc = 0
    try:
        for result in responses:
            position = sent.get()
            for skipped in range(next_doc, position):  # unreadable files before it, in order
                yield skipped, local[skipped]
            next_doc = position + 1
            yield position, _outcome(result, docs[position])
    except grpc.RpcError as exc:
        code, details = status_of(exc)
        if code in _FINAL:
            raise from_rpc_error(exc, service="freki", method="IndexDocuments", attempts=1) from exc
        raise StreamUnusable(f"{code.name}: {details}") from exc
    finally:
        responses.cancel()
    for skipped in range(next_doc, len(docs)):
        if skipped not in local:
            raise StreamUnusable("the stream ended before every document had its result")
        yield skipped, local[skipped]


def _outcome(result: freki_pb2.IndexDocumentsResult, doc: DocumentFile) -> IndexResult | OdinError:
    if result.HasField("response"):
        return index_result_from_proto(result.response, doc.source)
    code = getattr(grpc.StatusCode, result.error_code, grpc.StatusCode.UNKNOWN)
    return from_status(code, result.error_message, service="freki", method="IndexDocument")
