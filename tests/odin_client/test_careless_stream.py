"""index_documents against a careless IndexDocuments (canned servicer on a real gRPC server): results that come
out of order, or more results than documents, are never pinned on the wrong document — the client notices
the request_id that does not match, keeps what matched and sends the rest one call at a time, in both clients."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from wolf.v1 import freki_pb2

from odin_client import AsyncOdinClient, IndexResult, OdinClient, OdinSettings
from odin_client.protocol.files import DocumentFile
from tests.odin_client.conftest import running
from tests.odin_client.servicers_support import ControlledFreki, serve_freki


class CarelessFreki(ControlledFreki):
    """IndexDocuments answers the first document right, then the rest in reverse order (``reverse``) or in order,
    then one result too many."""

    reverse = True

    def IndexDocuments(self, requests: Iterator[freki_pb2.IndexDocumentRequest],  # noqa: N802
                       context: grpc.ServicerContext) -> Iterator[Any]:
        received = list(requests)

        def result(r: freki_pb2.IndexDocumentRequest) -> freki_pb2.IndexDocumentsResult:
            return freki_pb2.IndexDocumentsResult(request_id=r.request_id, document_id=r.source, response=(
                freki_pb2.IndexDocumentResponse(request_id=r.request_id, document_id=f"streamed:{r.source}")))

        rest = list(reversed(received[1:])) if self.reverse else received[1:]
        yield from [result(r) for r in [received[0], *rest, received[0]]]


@pytest.fixture
def careless() -> Iterator[tuple[CarelessFreki, Any]]:
    with running(CarelessFreki(), serve_freki) as pair:
        yield pair


def _docs() -> list[DocumentFile]:
    return [DocumentFile(Path(n), n, "markdown", content=f"# {n}".encode()) for n in ("a.md", "b.md", "c.md")]


def test_results_out_of_order_are_not_given_to_the_wrong_document(careless) -> None:  # type: ignore[no-untyped-def]
    servicer, handle = careless
    settings = OdinSettings(freki_target=handle.address)
    with OdinClient(settings) as client:
        blocking = client.index_documents(_docs())

    async def run() -> list[Any]:
        async with AsyncOdinClient(settings) as client:
            return await client.index_documents(_docs())

    for results in (blocking, asyncio.run(run())):
        assert all(isinstance(r, IndexResult) for r in results)
        # a.md's result matched; b.md and c.md were answered out of order, so they went one call at a time
        assert [r.document_id for r in results] == ["streamed:a.md", "id:b.md", "id:c.md"]
    assert [c.request.source for c in servicer.rec.calls if c.method == "IndexDocument"] == ["b.md", "c.md"] * 2


def test_one_result_too_many_changes_nothing(careless) -> None:  # type: ignore[no-untyped-def]
    servicer, handle = careless
    servicer.reverse = False
    with OdinClient(OdinSettings(freki_target=handle.address)) as client:
        results = client.index_documents(_docs())
    assert [r.document_id for r in results] == ["streamed:a.md", "streamed:b.md", "streamed:c.md"]
    assert servicer.rec.count("IndexDocument") == 0
