"""A client's deadline bounds the server's work on a hostile document, not only the client's wait.

Issue 32: a 4.9-million-character "word" kept Freki busy for 127-197 s after the client gave up at 30 s (chunk
planning never looked at the deadline), and one sentence repeated 70,000 times likewise. Each document goes
to a real Freki over gRPC with a short deadline; the evidence is the server's own log record of where the
work stopped and how long after the deadline, not the test's clock.
"""

from __future__ import annotations

import logging
import random
import string
import time
import uuid

import grpc
import pytest
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.engine import FrekiEngine
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration

HOSTILE = {
    # Letters at random, not one repeated: identical pieces would be embedded once, and the work would be quick.
    "huge-word": "".join(random.Random(32).choices(string.ascii_lowercase, k=4_900_000)),
    "repeated-sentence": "The quick brown fox jumps over the lazy dog near the river bank. " * 70_000,
}
DEADLINE_S = 8.0  # well inside both documents' work (each needs minutes to index in full)


def abandoned(caplog: pytest.LogCaptureFixture, document_id: str) -> logging.LogRecord | None:
    return next((r for r in caplog.records
                 if r.name == "freki.ingest" and "abandoned" in r.getMessage() and document_id in r.getMessage()),
                None)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_work_stops_soon_after_the_clients_deadline(freki_server: tuple[ServerHandle, FrekiEngine],
                                                    freki_stub: freki_pb2_grpc.FrekiServiceStub,
                                                    caplog: pytest.LogCaptureFixture, name: str) -> None:
    caplog.set_level(logging.WARNING, logger="freki.ingest")
    document_id = f"{name}-{uuid.uuid4().hex[:8]}"
    with pytest.raises(grpc.RpcError) as err:
        freki_stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=str(uuid.uuid4()), document_id=document_id, content=HOSTILE[name], content_type="text"),
            timeout=DEADLINE_S)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    waited = time.monotonic() + 120  # generous: only how late the server stopped is asserted, below
    while abandoned(caplog, document_id) is None and time.monotonic() < waited:
        time.sleep(0.2)
    record = abandoned(caplog, document_id)
    assert record is not None, "the server never reported stopping the work"
    message = record.getMessage()
    # gRPC ends the call at the client's deadline (the server sees a cancel), or the server's own copy of the
    # deadline passes first: either way the work stopped and wrote nothing.
    assert ("the deadline passed during" in message or "the call was cancelled" in message), message
    assert "nothing was written" in message
    overrun = float(message.rsplit("(", 1)[1].split(" s after")[0])  # from the deadline or the cancel, first
    assert overrun <= 2.0, message
    _, engine = freki_server
    assert engine.registry.get("default", document_id) is None
