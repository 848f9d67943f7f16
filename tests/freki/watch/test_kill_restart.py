"""kill -9 while the watcher works through a backlog, then restart: the index ends consistent, no duplicates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2, freki_pb2_grpc

from tests.freki.watch.conftest import paragraphs

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
FILES = 24


def _start(config: Path, log: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'protos'}", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "freki.cli", "serve", "--config", str(config), "--port", "0"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=open(log, "a"), text=True,  # noqa: SIM115
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "freki listening on 127.0.0.1:<port>", printed once serving
    if "listening on" not in line:
        proc.kill()
        raise AssertionError(f"freki did not start: {line!r}; see {log}:\n{log.read_text()[-3000:]}")
    return proc, line.rsplit(" ", 1)[-1].strip()


def _status(stub: freki_pb2_grpc.FrekiServiceStub) -> freki_pb2.IndexStatus:
    return stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)


def _documents(stub: freki_pb2_grpc.FrekiServiceStub) -> list[freki_pb2.DocumentInfo]:
    return list(stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=1000), timeout=30).documents)


def test_kill_9_during_indexing_then_restart_is_consistent(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(FILES):
        (folder / f"note-{i:02d}.md").write_text(paragraphs(f"topic{i}", 4))
    config = tmp_path / "freki.json"
    config.write_text(json.dumps({
        "data_dir": str(tmp_path / "data"),
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        "watch": {"folders": [{"path": str(folder), "name": "docs"}], "debounce_s": 0.2, "queue_size": 4},
    }))
    log = tmp_path / "freki.log"

    proc, address = _start(config, log)
    try:
        with grpc.insecure_channel(address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            deadline = time.monotonic() + 120
            while _status(stub).document_count < 3:
                assert time.monotonic() < deadline, "indexing never got going"
                time.sleep(0.05)
            status = _status(stub)
            assert status.document_count < FILES, "too late to interrupt: make the backlog bigger"
            assert 0 < status.queue_depth, "the backlog is reported while it is worked on"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)

    # One more change while down, so catch-up has real work besides the unfinished backlog.
    (folder / "note-00.md").write_text(paragraphs("topic0", 4) + "\n\nAppended after the crash.")
    proc, address = _start(config, log)  # reopens the edge store the killed process held
    try:
        with grpc.insecure_channel(address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            deadline = time.monotonic() + 240
            while True:
                status = _status(stub)
                folder_status = status.watch_folders[0]
                if status.queue_depth == 0 and folder_status.files_pending == 0:
                    break
                assert time.monotonic() < deadline, f"catch-up did not finish: {status}"
                time.sleep(0.2)
            documents = _documents(stub)
            ids = [d.document_id for d in documents]
            assert sorted(ids) == sorted(f"docs/note-{i:02d}.md" for i in range(FILES)), "each file exactly once"
            assert status.chunk_count == sum(d.chunk_count for d in documents), "no duplicate or orphan chunks"
            assert folder_status.files_indexed == FILES and not folder_status.skipped
            exported = list(stub.ExportOwnerData(freki_pb2.ExportOwnerDataRequest(
                request_id="check", owner_id="default"), timeout=60))
            chunks = [r.chunk for r in exported if r.WhichOneof("record") == "chunk"]
            assert len({(c.document_id, c.chunk_index) for c in chunks}) == len(chunks) == status.chunk_count
            assert any("Appended after the crash" in c.content for c in chunks if c.document_id == "docs/note-00.md")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()[-3000:]
