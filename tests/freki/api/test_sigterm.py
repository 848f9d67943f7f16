"""SIGTERM while a large document is being indexed: the server stops within its grace period (the call is
cancelled, its parser worker killed, its embedding loop stopped) and leaves nothing half-written."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2

from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from tests.freki.ingest.test_crash_points import Server

pytestmark = [pytest.mark.integration, pytest.mark.slow]
GRACE = 1.0


def test_sigterm_during_indexing_stops_within_the_grace_period(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "freki.json"
    config.write_text(json.dumps({"data_dir": str(tmp_path / "data"), "shutdown_grace_s": GRACE}))
    log = tmp_path / "freki.log"
    server = Server(config, log, "none")
    text = "\n\n".join(f"Entry {i}: the tide table for harbour {i} lists high water at {i % 12} o'clock, low "
                       f"water six hours later, weather permitting, each day of month {i % 12}." for i in range(4000))
    outcome: list[grpc.StatusCode] = []

    def index() -> None:
        try:
            server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id="big", document_id="big.txt", content=text), timeout=600)
            outcome.append(grpc.StatusCode.OK)
        except grpc.RpcError as exc:
            outcome.append(exc.code())

    worker = threading.Thread(target=index)
    worker.start()
    time.sleep(2.0)  # parsed and embedding by now (this document takes well over a minute here)
    assert not outcome, "indexing finished before the signal: make the document bigger"
    sent = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    code = server.proc.wait(60)
    stopped = time.monotonic() - sent
    worker.join(30)
    print(f"\nSIGTERM -> exit: {stopped:.2f} s (grace {GRACE} s)")
    assert code == 0, log.read_text()[-2000:]
    assert stopped < GRACE + 3.0, f"took {stopped:.1f} s to stop"
    assert outcome and outcome[0] != grpc.StatusCode.OK

    engine = FrekiEngine(FrekiSettings(data_dir=tmp_path / "data"), embedder=embedder)  # reopens the data dir
    try:
        assert engine.registry.count() == 0 and engine.chunks.inner.count([]) == 0, "nothing half-written"
        assert engine.keys.ids() == [], "no key of an unfinished version"
    finally:
        engine.close()
