"""IndexDocuments: many documents over one stream, results in order, refusals in place; and Odin using it."""

from __future__ import annotations

import uuid
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2

from odin_client import OdinClient, OdinSettings
from odin_client.types.errors import InvalidRequest
from odin_client.types.writes import IndexResult
from tests.freki.api.corpus_support import ASTRO_DOC, BAKERY_DOC, GERI_DOC

pytestmark = pytest.mark.integration


def request(doc_id: str, content: str = "", **kw) -> freki_pb2.IndexDocumentRequest:  # type: ignore[no-untyped-def]
    return freki_pb2.IndexDocumentRequest(request_id=uuid.uuid4().hex, document_id=doc_id, content=content, **kw)


def test_results_come_in_order_with_refusals_in_place(freki_stub) -> None:  # type: ignore[no-untyped-def]
    sent = [
        request("batch/geri.md", GERI_DOC),
        request("batch/empty.md", ""),                     # nothing to index
        request("batch/bread.md", BAKERY_DOC),
        request("batch/bad\x07id", ASTRO_DOC),              # a control character in the id
        request("batch/jupiter.txt", ASTRO_DOC, metadata={"k" * 300: "v"}),  # metadata key too long
        request("batch/geri.md", GERI_DOC),                 # the same document again: unchanged
    ]
    results = list(freki_stub.IndexDocuments(iter(sent), timeout=120))
    assert [r.request_id for r in results] == [r.request_id for r in sent]
    assert [r.error_code for r in results] == ["", "INVALID_ARGUMENT", "", "INVALID_ARGUMENT", "INVALID_ARGUMENT", ""]
    assert "\\x07" in results[3].error_message or "control" in results[3].error_message
    assert results[0].response.outcome == freki_pb2.INDEX_OUTCOME_CREATED
    assert results[5].response.outcome == freki_pb2.INDEX_OUTCOME_UNCHANGED
    listed = {d.document_id for d in freki_stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100)).documents}
    assert {"batch/geri.md", "batch/bread.md"} <= listed and "batch/jupiter.txt" not in listed


def test_a_malformed_message_ends_the_stream_with_invalid_argument(freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    with grpc.insecure_channel(handle.address) as channel:
        raw = channel.stream_stream("/wolf.v1.FrekiService/IndexDocuments",
                                    request_serializer=lambda b: b, response_deserializer=lambda b: b)
        good = request("batch/ok.md", GERI_DOC).SerializeToString()
        with pytest.raises(grpc.RpcError) as err:
            list(raw(iter([good, b"\xff\xff\xff\xff not protobuf"]), timeout=60))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_odin_index_streams_a_folder_and_reports_each_file(freki_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    handle, engine = freki_server
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text(GERI_DOC)
    (folder / "b.md").write_text(BAKERY_DOC)
    (folder / "c.md").write_text("---\nk: [unclosed\n---\nbody")  # broken frontmatter: refused by Freki
    (folder / "d.txt").write_text(ASTRO_DOC)
    calls = []
    original = engine.index

    def counted(doc, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(doc.document_id)
        return original(doc, *args, **kwargs)

    engine.index = counted  # type: ignore[method-assign]
    try:
        seen = []
        with OdinClient(OdinSettings(freki_target=handle.address)) as odin:
            results = odin.index([folder], on_progress=lambda doc, outcome: seen.append(Path(doc.source).name))
    finally:
        engine.index = original  # type: ignore[method-assign]
    assert seen == ["a.md", "b.md", "c.md", "d.txt"]
    assert [type(r) for r in results] == [IndexResult, IndexResult, InvalidRequest, IndexResult]
    assert len(calls) == 4  # each file once: over the stream, no per-file fallback


def test_a_client_that_waits_for_each_result_before_sending_the_next_gets_it(freki_stub) -> None:  # type: ignore[no-untyped-def]
    """Send one document, wait for its result, then send the next (a client applying its own back-pressure): the
    result must come while the stream is open, not only once the next request or the end of the stream arrives."""
    import queue

    outbox: queue.Queue[freki_pb2.IndexDocumentRequest | None] = queue.Queue()

    def requests():  # type: ignore[no-untyped-def]
        while (item := outbox.get(timeout=30)) is not None:
            yield item

    results = freki_stub.IndexDocuments(requests(), timeout=30)
    got = []
    for doc_id, text in [("pingpong/geri.md", GERI_DOC), ("pingpong/bread.md", BAKERY_DOC)]:
        outbox.put(request(doc_id, text))
        got.append(next(results).document_id)  # blocked until the 30 s deadline when results waited for requests
    outbox.put(None)
    assert got == ["pingpong/geri.md", "pingpong/bread.md"] and list(results) == []
