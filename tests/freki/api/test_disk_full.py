"""A real ``freki serve`` on a small tmpfs that its own writes fill: writes are refused before the disk is full
(RESOURCE_EXHAUSTED naming the disk and the setting), the process never dies (the engine's memory-mapped files
would SIGBUS on a full disk), reads keep serving, health says degraded, and a restart on the full disk serves
every acknowledged document. Needs root (``mount -t tmpfs``)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import common_pb2, freki_pb2

from tests.freki.freki_process_support import FrekiProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
MIB = 1024 * 1024
REFUSE = 16 * MIB


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 384 MiB tmpfs, unmounted afterwards. An empty Freki takes ~51 MiB of it at once and ~250 MiB more at
its next start (on tmpfs the engine's load allocates the holes of its files, freki.store.disk)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fill(path: Path, todo: int) -> None:
    """Write ``todo`` bytes of zeros to ``path``."""
    with path.open("wb") as f:
        while todo > 0:
            todo -= f.write(b"\0" * min(todo, MIB))


def _page(i: int) -> bytes:
    """An HTML page with one short paragraph and 3 MB of incompressible comment: its kept source fills the disk
    fast while embedding stays cheap."""
    noise = base64.b64encode(os.urandom(3 * MIB // 4 * 3)).decode()
    return f"<html><body><p>Harbour report {i}: the tide came in at dawn.</p><!-- {noise} --></body></html>".encode()


def _ask(server: FrekiProcess, text: str) -> list[str]:
    reply = server.stub.RetrieveContext(common_pb2.WolfRequest(request_id="q", prompt=text, model_type=common_pb2.RAG),
                                       timeout=60)
    return [d.document_id for d in reply.rag_context.documents]


def _settled_free(server: FrekiProcess) -> int:
    """Free bytes once the engine's background work (segment optimisation, whose files' holes count on tmpfs)
    has stopped changing them: two readings 3 s apart (longer than the 2 s the tmpfs scan is cached) agree."""
    def free() -> int:
        return server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30).disk.free_bytes

    last = free()
    for _ in range(20):
        time.sleep(3)
        now = free()
        if abs(now - last) < MIB:
            return now
        last = now
    return last


def test_a_disk_filled_by_indexing_refuses_writes_and_keeps_serving(small_disk: Path, tmp_path: Path) -> None:
    data = small_disk / "freki"
    metrics_port = _free_port()
    config = tmp_path / "freki.json"
    config.write_text(json.dumps({
        "data_dir": str(data), "metrics": {"port": metrics_port},
        "disk": {"refuse_free_bytes": REFUSE, "refuse_free_percent": 0, "warn_free_bytes": 24 * MIB,
                 "warn_free_percent": 0, "check_interval_s": 0.5},
    }))
    log = tmp_path / "freki.log"
    server = FrekiProcess(config, log)
    acknowledged = ["anchor.txt"]
    try:
        server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="a", document_id="anchor.txt", content=b"Bread needs flour, water, salt and yeast."),
            timeout=120)
        refusal: grpc.RpcError | None = None
        for i in range(40):  # the disk holds at most ~12 of these pages: the loop ends with a refusal
            try:
                server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id=f"p{i}", document_id=f"page{i}.html", content=_page(i)), timeout=120)
                acknowledged.append(f"page{i}.html")
            except grpc.RpcError as exc:
                refusal = exc
                break
        assert refusal is not None, "the disk never filled"
        assert refusal.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (refusal.code(), refusal.details(),
                                                                       log.read_text()[-3000:])
        assert str(data) in refusal.details() and "disk.refuse_free_bytes" in refusal.details()
        assert server.proc.poll() is None, "freki died"

        # Another process takes the rest: below the refuse level even a small write is refused.
        _fill(small_disk / "ballast", _settled_free(server) - (REFUSE - 2 * MIB))
        # Reads keep serving; every write path refuses; health and metrics say why.
        assert _ask(server, "what goes into bread")[0] == "anchor.txt"
        with pytest.raises(grpc.RpcError) as again:
            server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id="small", document_id="small.txt", content=b"A small note."), timeout=60)
        assert again.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        assert status.health == "degraded" and status.disk.level == "refuse", status
        assert any("writes refused" in r for r in status.health_reasons)
        health = health_pb2_grpc.HealthStub(server.channel)
        assert health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status == \
            health_pb2.HealthCheckResponse.SERVING
        assert health.Check(health_pb2.HealthCheckRequest(service="wolf.v1.FrekiService.writes"),
                            timeout=10).status == health_pb2.HealthCheckResponse.NOT_SERVING
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        assert "freki_disk_state 2.0" in metrics and "freki_disk_refused_writes_total" in metrics
        assert "disk space below the refuse level" in log.read_text()
    finally:
        server.stop()

    # Start-up on the full disk. On tmpfs the engine's load allocates the holes of its files (docs/operations.md,
    # "Disk space"): with room for that it serves reads, degraded; without, it stops with one clear ERROR (exit 3)
    # instead of a SIGBUS or a traceback loop. Which of the two happens depends on how much the load needs.
    before = len(log.read_text())
    try:
        server = FrekiProcess(config, log)
    except AssertionError:
        text = log.read_text()[before:]
        assert "freki cannot start" in text and "free space first" in text and "Traceback" not in text, text[-2000:]
        (small_disk / "ballast").unlink()
        # The holes of the engine's files may not fit even then (a known gap: the watermarks do not yet reserve
        # the next load's allocation on tmpfs): the operator gives the disk room, as the ERROR says.
        subprocess.run(["mount", "-o", "remount,size=1024m", str(small_disk)], check=True)
    else:
        try:
            listed = server.stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100), timeout=30)
            assert sorted(d.document_id for d in listed.documents) == sorted(acknowledged)
            assert _ask(server, "what goes into bread")[0] == "anchor.txt"
            assert server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30).health == "degraded"
            with pytest.raises(grpc.RpcError) as refused:
                server.stub.RecordFeedback(freki_pb2.FeedbackRequest(
                    request_id="f", query_id="0b4f4c0e-8d3c-4c43-9d7e-1d2b1a0f0e11", rating=1), timeout=30)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # Deletions (and erasures) go on down to half the refuse level.
            deleted = server.stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(
                request_id="d", document_id=acknowledged.pop()), timeout=60)
            assert deleted.chunks_deleted >= 1
            (small_disk / "ballast").unlink()
        finally:
            server.stop()
    # Space freed: every acknowledged document is there and writes are taken again.
    server = FrekiProcess(config, log)
    try:
        listed = server.stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100), timeout=30)
        assert sorted(d.document_id for d in listed.documents) == sorted(acknowledged)
        assert _ask(server, "what goes into bread")[0] == "anchor.txt"
        server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="n", document_id="note.txt", content=b"Rye bread keeps for a week."), timeout=60)
        acknowledged.append("note.txt")
    finally:
        server.stop()
    server = FrekiProcess(config, log)
    try:
        listed = server.stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=100), timeout=30)
        assert sorted(d.document_id for d in listed.documents) == sorted(acknowledged)
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        assert status.health == "ok", status
    finally:
        server.stop()
