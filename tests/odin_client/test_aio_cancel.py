"""AsyncOdinClient under cancellation (real gRPC servers, canned servicers): a task cancelled mid-call or
mid-backoff gets asyncio.CancelledError at once and nothing is sent again; a call cut short by ``close()`` from
another task is ClientClosed — not a CancelledError in a task nobody cancelled (grpc.aio's way of reporting a
locally cancelled call), which asyncio would take for a cancellation (a TaskGroup drops such a child
silently) — and in the blocking client, a call cut short by ``close()`` from another thread is ClientClosed too."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from wolf.v1 import freki_pb2

from odin_client import AsyncOdinClient, ClientClosed, OdinSettings
from odin_client.protocol.files import DocumentFile
from tests.odin_client.conftest import running
from tests.odin_client.document_servicer_support import DocumentFreki
from tests.odin_client.servicers_support import Faults, serve_freki
from wolf_service.serving import ServerHandle


class SlowStreamFreki(DocumentFreki):
    """IndexDocuments that answers each document after a second."""

    def IndexDocuments(self, requests: Iterator[freki_pb2.IndexDocumentRequest],  # noqa: N802
                       context: grpc.ServicerContext) -> Iterator[Any]:
        for request in requests:
            time.sleep(1.0)
            yield freki_pb2.IndexDocumentsResult(response=freki_pb2.IndexDocumentResponse(
                request_id=request.request_id, document_id=request.source, chunk_count=1))


@pytest.fixture
def docs_freki() -> Iterator[tuple[DocumentFreki, ServerHandle]]:
    with running(DocumentFreki(), serve_freki) as pair:
        yield pair


def _settings(handle: ServerHandle, **kw: float) -> OdinSettings:
    return OdinSettings(freki_target=handle.address, retry_jitter=0.0, **kw)


def test_close_during_a_call_or_a_stream_is_client_closed_not_a_cancellation(docs_freki):
    servicer, handle = docs_freki
    servicer.rec.faults = Faults(hang_s=2.0, hang_times=1)
    servicer.export_break_after = 1  # the export stream sends one record, then blocks

    async def run() -> list[BaseException | None]:
        client = AsyncOdinClient(_settings(handle))

        async def export() -> None:
            async for _ in client.export_owner("olga"):
                await asyncio.sleep(0)  # keep reading: the next read blocks on the server

        tasks = [asyncio.create_task(client.status()), asyncio.create_task(export())]
        await asyncio.sleep(0.5)
        await client.close()
        return await asyncio.gather(*tasks, return_exceptions=True)

    outcomes = asyncio.run(run())
    assert [type(o) for o in outcomes] == [ClientClosed, ClientClosed]


def test_a_cancelled_task_gets_cancelled_error_in_flight_and_in_backoff(docs_freki):
    servicer, handle = docs_freki

    async def cancel_after(delay: float, settings: OdinSettings) -> bool:
        async with AsyncOdinClient(settings) as client:
            task = asyncio.create_task(client.status())
            await asyncio.sleep(delay)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return True
            return False

    servicer.rec.faults = Faults(hang_s=1.0, hang_times=1)
    assert asyncio.run(cancel_after(0.3, _settings(handle, deadline_s=30)))
    assert servicer.rec.count("GetIndexStatus") == 1
    servicer.rec.faults = Faults(fail_times=-1)  # UNAVAILABLE: an immediate retry, then a 5 s backoff
    assert asyncio.run(cancel_after(0.5, _settings(handle, deadline_s=30, retry_initial_backoff_s=5.0)))
    assert servicer.rec.count("GetIndexStatus") == 3  # the cancelled wait sent nothing more


def test_close_during_index_documents_is_client_closed() -> None:
    with running(SlowStreamFreki(), serve_freki) as (_, handle):
        docs = [DocumentFile(Path(f"{i}.md"), f"{i}.md", "markdown", content=b"# note") for i in range(3)]

        async def run() -> list[BaseException | Any]:
            client = AsyncOdinClient(_settings(handle))
            task = asyncio.create_task(client.index_documents(docs))
            await asyncio.sleep(0.5)
            await client.close()
            return await asyncio.gather(task, return_exceptions=True)

        assert [type(o) for o in asyncio.run(run())] == [ClientClosed]


def test_the_blocking_client_closed_during_a_call_raises_client_closed_too(docs_freki):
    import threading

    from odin_client import OdinClient

    servicer, handle = docs_freki
    servicer.rec.faults = Faults(hang_s=2.0, hang_times=1)
    client = OdinClient(_settings(handle))
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.status()
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.5)
    client.close()
    caller.join(10)
    assert [type(o) for o in outcome] == [ClientClosed]
