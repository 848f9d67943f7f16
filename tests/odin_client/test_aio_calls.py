"""AsyncOdinClient's document, graph, session and embedding calls at the seam (canned servicers behind real
gRPC servers): the same requests, metadata and results as OdinClient; the same retry rules (a write is never
retried after a DEADLINE_EXCEEDED, when it may have reached Freki); the same errors."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from wolf.v1 import geri_pb2

from odin_client import (
    AsyncOdinClient,
    DeadlineExceeded,
    IndexResult,
    InvalidRequest,
    NotFound,
    OdinSettings,
    PermissionDenied,
    ServiceUnavailable,
    StreamInterrupted,
)
from odin_client.protocol.files import DocumentFile
from tests.odin_client.conftest import running
from tests.odin_client.document_servicer_support import DocumentFreki
from tests.odin_client.servicers_support import ControlledGeri, serve_freki, serve_geri
from wolf_service.serving import ServerHandle

# (method, args, kwargs): every call the asyncio client gained, with arguments that reach the request.
CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("list_documents", (), {"page_size": 2, "page_token": "2", "owner_id": "olga", "tenant_id": "t1"}),
    ("get_document", ("doc-1",), {"tenant_id": "t1"}),
    ("delete_document", ("doc-1",), {"tenant_id": "t2"}),
    ("full_reindex", (), {"document_id": "doc-1", "migrate_model": True}),
    ("embed", (["a", "bcd"],), {}),
    ("list_links", ("doc-1",), {"page_size": 3}),
    ("record_feedback", ("q-1", 4), {"document_id": "doc-1", "comment": "ok"}),
    ("delete_session", ("known",), {"tenant_id": "t3"}),
]


class SessionGeri(ControlledGeri):
    """ControlledGeri that also deletes sessions (only "known" exists)."""

    def DeleteSession(self, request: geri_pb2.SessionRequest, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self.rec.enter("DeleteSession", request, context)
        return geri_pb2.DeleteSessionResponse(request_id=request.request_id, deleted=request.session_id == "known")


@pytest.fixture
def docs_freki() -> Iterator[tuple[DocumentFreki, ServerHandle]]:
    with running(DocumentFreki(), serve_freki) as pair:
        yield pair


@pytest.fixture
def session_geri() -> Iterator[tuple[SessionGeri, ServerHandle]]:
    with running(SessionGeri(), serve_geri) as pair:
        yield pair


def _run(settings: OdinSettings, work: Any) -> Any:
    async def main() -> Any:
        async with AsyncOdinClient(settings) as client:
            return await work(client)

    return asyncio.run(main())


def _without_request_id(request: Any) -> Any:
    copy = type(request)()
    copy.CopyFrom(request)
    if "request_id" in copy.DESCRIPTOR.fields_by_name:
        copy.request_id = ""
    return copy


def _comparable(result: Any) -> Any:
    return _without_request_id(result) if isinstance(result, Message) else result


def test_async_calls_send_and_return_what_the_blocking_client_does(docs_freki, session_geri, make_client):
    freki, geri = docs_freki[0], session_geri[0]
    targets = {"freki_target": docs_freki[1].address, "geri_target": session_geri[1].address, "api_key": "k-9"}

    async def work(client: AsyncOdinClient) -> list[Any]:
        results = [await getattr(client, name)(*args, **kwargs) for name, args, kwargs in CALLS]
        results.append([d async for d in client.iter_documents(page_size=2, owner_id="olga")])
        results.append([r async for r in client.export_owner("olga", include_vectors=True)])
        return results

    got = _run(OdinSettings(**targets), work)
    blocking = make_client(**targets)
    expected = [getattr(blocking, name)(*args, **kwargs) for name, args, kwargs in CALLS]
    expected.append(list(blocking.iter_documents(page_size=2, owner_id="olga")))
    expected.append(list(blocking.export_owner("olga", include_vectors=True)))
    assert [_comparable(r) for r in got] == [_comparable(r) for r in expected]
    assert [d.document_id for d in got[-2]] == [f"doc-{i}" for i in range(5)]  # three pages
    assert [next(iter(r)) for r in got[-1]] == ["document", "links", "chunk"]
    for rec in (freki.rec, geri.rec):  # the asyncio client's calls first, then the blocking client's
        half = len(rec.calls) // 2
        first, second = rec.calls[:half], rec.calls[half:]
        assert [c.method for c in first] == [c.method for c in second]
        assert [_without_request_id(c.request) for c in first] == [_without_request_id(c.request) for c in second]
        assert all(c.metadata["authorization"] == "Bearer k-9" for c in rec.calls)
    assert freki.rec.calls[0].request.tenant_id == "t1" and freki.rec.calls[0].request.owner_id == "olga"


def test_a_read_is_retried_after_deadline_exceeded_a_write_is_not(docs_freki):
    """A hung GetDocument is asked again; a hung RecordFeedback may have been recorded, so it is not."""
    freki, handle = docs_freki
    freki.rec.faults.hang_s, freki.rec.faults.hang_times = 1.0, 1
    settings = OdinSettings(freki_target=handle.address, attempt_timeout_s=0.3, deadline_s=10, retry_jitter=0.0)
    record = _run(settings, lambda c: c.get_document("doc-2"))
    assert record.document_id == "doc-2" and freki.rec.count("GetDocument") == 2
    with pytest.raises(DeadlineExceeded) as info:
        _run(settings, lambda c: c.record_feedback("q-1", 5))
    assert info.value.attempts == 1 and freki.rec.count("RecordFeedback") == 1


def test_unavailable_is_retried_for_writes_too_and_errors_map_like_the_blocking_client(docs_freki):
    freki, handle = docs_freki
    settings = OdinSettings(freki_target=handle.address, retry_initial_backoff_s=0.01, retry_jitter=0.0)
    freki.rec.faults.fail_times = 1  # UNAVAILABLE once: the connection failed, nothing was done
    assert _run(settings, lambda c: c.delete_document("doc-1")) == 3
    assert freki.rec.count("DeleteDocument") == 2
    freki.rec.faults.fail_times = 0
    with pytest.raises(NotFound, match="doc-404"):
        _run(settings, lambda c: c.get_document("doc-404"))
    for code, error in [(grpc.StatusCode.INVALID_ARGUMENT, InvalidRequest),
                        (grpc.StatusCode.PERMISSION_DENIED, PermissionDenied)]:
        freki.rec.calls.clear()
        freki.rec.faults.code, freki.rec.faults.fail_times = code, -1
        with pytest.raises(error) as info:
            _run(settings, lambda c: c.list_links("doc-1"))
        assert info.value.service == "freki" and info.value.attempts == 1 and freki.rec.count("ListLinks") == 1


def test_export_is_retried_before_its_first_record_and_a_break_after_it_raises(docs_freki):
    freki, handle = docs_freki
    settings = OdinSettings(freki_target=handle.address, retry_initial_backoff_s=0.01, retry_jitter=0.0)
    freki.rec.faults.fail_times = 1

    async def export_all(client: AsyncOdinClient) -> list[dict[str, Any]]:
        return [r async for r in client.export_owner("olga")]

    assert len(_run(settings, export_all)) == 3 and freki.rec.count("ExportOwnerData") == 2
    freki.export_break_after = 1
    stopper = threading.Thread(target=lambda: (freki.blocked.wait(10), handle.server.stop(0)))
    stopper.start()
    received: list[dict[str, Any]] = []

    async def export_some(client: AsyncOdinClient) -> None:
        async for record in client.export_owner("olga"):
            received.append(record)

    try:
        with pytest.raises(StreamInterrupted, match="after 1 message"):
            _run(settings, export_some)
    finally:
        freki.release.set()
        stopper.join()
    assert [next(iter(r)) for r in received] == ["document"]


def test_index_documents_falls_back_to_single_calls_in_order_with_errors_in_place(docs_freki, tmp_path: Path):
    """The canned Freki has no IndexDocuments stream (an older Freki): every document goes one call at a
    time, in order; an unreadable file takes its place as an error; an unreachable Freki stops the run."""
    freki, handle = docs_freki
    (tmp_path / "a.md").write_text("# A\n")
    (tmp_path / "c.md").write_text("# C\n")
    docs = [DocumentFile(tmp_path / n, n, "markdown") for n in ("a.md", "missing.md", "c.md")]
    settings = OdinSettings(freki_target=handle.address, retry_initial_backoff_s=0.01, retry_jitter=0.0,
                            retry_max_attempts=2)
    seen: list[str] = []
    results = _run(settings, lambda c: c.index_documents(docs, metadata={"k": "v"}, tenant_id="t1",
                                                         on_progress=lambda d, _: seen.append(d.source)))
    assert [type(r) for r in results] == [IndexResult, InvalidRequest, IndexResult]
    assert seen == ["a.md", "missing.md", "c.md"]
    sent = [c.request for c in freki.rec.calls if c.method == "IndexDocument"]
    assert [(r.source, r.tenant_id, dict(r.metadata)) for r in sent] == [("a.md", "t1", {"k": "v"}),
                                                                          ("c.md", "t1", {"k": "v"})]
    with pytest.raises(InvalidRequest, match="missing.md"):
        _run(settings, lambda c: c.index_documents(docs, stop_on_error=True))
    freki.rec.faults.fail_times = -1
    with pytest.raises(ServiceUnavailable):
        _run(settings, lambda c: c.index_documents(docs))
