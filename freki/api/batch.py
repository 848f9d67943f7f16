"""IndexDocuments: many documents over one bidirectional stream, a result per document, in order.

Up to ``limits.batch_parallel`` documents are in work at once, so one document's parsing (a sandboxed
worker process) and the next one's embedding overlap and both cores stay busy; the next request is read
only when a slot is free, so a client streaming a huge folder never makes the server buffer it. A refused
document — bad input, a limit, its deadline — gets the status IndexDocument would have returned, in its
result, and the stream goes on; the stream itself ends early only when the call does (cancelled, its
deadline, shutdown) or the client's messages are malformed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from wolf.v1 import freki_pb2

from wolf_service.error_mapping import status_for

IndexOne = Callable[[freki_pb2.IndexDocumentRequest], freki_pb2.IndexDocumentResponse]


def index_stream(requests: Iterator[freki_pb2.IndexDocumentRequest], index_one: IndexOne,
                 parallel: int) -> Iterator[freki_pb2.IndexDocumentsResult]:
    """Index ``requests`` with ``index_one``, ``parallel`` at a time; yield their results in request order.

    Requests are read on a thread of their own, so a result goes out as soon as it is ready: a client that waits
    for each result before it sends the next document is answered (read here, between results, the stream waited
    for the next request before sending the result the client was waiting for, until the deadline).
    """
    slots = threading.Semaphore(parallel)  # a request is read only when a slot is free: nothing is buffered
    started: queue.Queue[tuple[freki_pb2.IndexDocumentRequest, Future[freki_pb2.IndexDocumentResponse]]
                         | BaseException | None] = queue.Queue()
    ended = threading.Event()
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="freki-batch") as pool:

        def read() -> None:
            try:
                while True:
                    slots.acquire()  # held by the document until its result has gone out
                    if ended.is_set():
                        return
                    request = next(requests, None)
                    if request is None:
                        started.put(None)
                        return
                    started.put((request, pool.submit(index_one, request)))
            except BaseException as exc:  # the call ended, or a malformed message aborted it: the handler raises it
                started.put(exc)

        threading.Thread(target=read, name="freki-batch-reader", daemon=True).start()
        held: list[Future[freki_pb2.IndexDocumentResponse]] = []
        try:
            while (item := started.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                request, future = item
                held.append(future)
                result = _result(request, future)
                held.remove(future)
                slots.release()
                yield result
        finally:
            ended.set()
            slots.release()  # a reader waiting for a slot sees the end
            for future in held:  # the call ended early: do not start what has not started
                future.cancel()
            while not started.empty():
                item = started.get_nowait()
                if isinstance(item, tuple):
                    item[1].cancel()


def _result(request: freki_pb2.IndexDocumentRequest,
            future: Future[freki_pb2.IndexDocumentResponse]) -> freki_pb2.IndexDocumentsResult:
    document_id = request.document_id or request.source
    try:
        response = future.result()
    except Exception as exc:  # mapped as the unary RPC's interceptor maps it
        code, message = status_for(exc, f"IndexDocuments ({document_id[:200]!r})", request.request_id)
        return freki_pb2.IndexDocumentsResult(request_id=request.request_id, document_id=document_id,
                                              error_code=code.name, error_message=message)
    return freki_pb2.IndexDocumentsResult(request_id=request.request_id, document_id=response.document_id,
                                          response=response)
