"""index_documents against the real Freki with hostile batches: a document too large for one gRPC message,
documents Freki refuses, good ones between them — each outcome in its place, over the one IndexDocuments
stream (a document the client cannot send must not break the stream for the others), in both clients; and a
client whose stream breaks off is not an internal error of Freki's."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import grpc
import pytest

pytest.importorskip("freki.api.server")

from odin_client import (  # noqa: E402
    AsyncOdinClient,  # noqa: E402
    IndexResult,
    InvalidRequest,
    OdinClient,
    OdinSettings,
)
from odin_client.protocol.files import DocumentFile  # noqa: E402
from wolf_service.serving import ServerHandle  # noqa: E402

pytestmark = pytest.mark.integration

BROKEN = b"---\nk: [unclosed\n---\nbody"  # frontmatter Freki refuses


def _doc(source: str, data: bytes) -> DocumentFile:
    return DocumentFile(Path(source), source, "markdown", content=data)


def _batch(limit: int) -> list[DocumentFile]:
    return [_doc("a.md", b"# Alpha\n\nCats sleep all day."), _doc("huge.md", b"x" * (limit + 1)),
            _doc("b.md", b"# Beta\n\nDogs bark at night."), _doc("broken.md", BROKEN),
            _doc("c.md", b"# Gamma\n\nBirds sing at dawn.")]


def _check(results: list[IndexResult | InvalidRequest], limit: int) -> None:
    assert [type(r) for r in results] == [IndexResult, InvalidRequest, IndexResult, InvalidRequest, IndexResult]
    assert [r.document_id for r in results if isinstance(r, IndexResult)] == ["a.md", "b.md", "c.md"]
    huge = results[1]
    assert isinstance(huge, InvalidRequest) and huge.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "huge.md" in str(huge) and f"{limit:,}" in str(huge) and "ODIN_MAX_MESSAGE_BYTES" in str(huge)


def test_a_document_too_large_to_send_is_its_own_error_and_the_stream_goes_on(
        real_freki: ServerHandle, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="odin")
    limit = 64 * 1024 * 1024  # the default: the server's own gRPC message limit
    settings = OdinSettings(freki_target=real_freki.address, index_deadline_s=120)
    with OdinClient(settings) as client:
        _check(client.index_documents(_batch(limit), tenant_id="blocking"), limit)

    async def run() -> list[IndexResult | InvalidRequest]:
        async with AsyncOdinClient(settings) as client:
            return await client.index_documents(_batch(limit), tenant_id="aio")  # type: ignore[return-value]

    _check(asyncio.run(run()), limit)
    assert "stream unusable" not in caplog.text  # every document went over the IndexDocuments stream


def test_a_file_over_the_limit_is_refused_without_being_read(real_freki: ServerHandle, tmp_path: Path):
    limit = 64 * 1024
    settings = OdinSettings(freki_target=real_freki.address, index_deadline_s=120, max_message_bytes=limit)
    big = tmp_path / "big.txt"
    with big.open("wb") as f:  # sparse: its size is over the limit, nothing is written
        f.truncate(limit + 1)
    ok = tmp_path / "ok.txt"
    ok.write_text("A small note about owls.")
    with OdinClient(settings) as client:
        got = client.index_documents([DocumentFile(big, "big.txt", ""), DocumentFile(ok, "ok.txt", "")],
                                     tenant_id="files")
    assert isinstance(got[0], InvalidRequest) and got[0].code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"{limit + 1:,} bytes" in str(got[0]) and f"{limit:,}" in str(got[0])
    assert isinstance(got[1], IndexResult) and got[1].document_id == "ok.txt"


def test_a_client_that_breaks_off_its_stream_is_not_an_internal_error(real_freki: ServerHandle,
                                                                     caplog: pytest.LogCaptureFixture):
    """A client gone mid-stream (its send failed, it was killed, it cancelled) is the client's doing: no INTERNAL
    status and no traceback in Freki's log (any caller could fill the log so)."""
    import time

    from wolf.v1 import freki_pb2, freki_pb2_grpc

    caplog.set_level(logging.INFO)
    small = freki_pb2.IndexDocumentRequest(request_id="r-1", tenant_id="gone", source="one.md", content="# One")
    large = freki_pb2.IndexDocumentRequest(request_id="r-2", tenant_id="gone", source="two.md", content="x" * 4096)
    # The client refuses to send the second message (its own limit): its stream ends in an error mid-way.
    with grpc.insecure_channel(real_freki.address, options=[("grpc.max_send_message_length", 1024)]) as channel:
        with pytest.raises(grpc.RpcError):
            list(freki_pb2_grpc.FrekiServiceStub(channel).IndexDocuments(iter([small, large]), timeout=30))
    for _ in range(50):  # the server notices a moment later; the access log line comes last
        if "FrekiService/IndexDocuments CANCELLED" in caplog.text:
            break
        time.sleep(0.1)
    assert "FrekiService/IndexDocuments CANCELLED" in caplog.text
    assert "internal error" not in caplog.text and "Traceback" not in caplog.text
