"""A backup that runs out of disk is refused with RESOURCE_EXHAUSTED and leaves nothing behind; the served
index is untouched. A real 256 KiB tmpfs (root only) as backup.dir, a real server, engine and model."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration


def test_a_full_disk_refuses_the_backup_and_leaves_nothing(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)],
                                           capture_output=True).returncode:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        settings = freki_settings(tmp_path / "data", backup={"dir": small})
        handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
        try:
            with grpc.insecure_channel(handle.address) as channel:
                stub = freki_pb2_grpc.FrekiServiceStub(channel)
                stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id="d", document_id="d", content="The harbour master logs every ferry. " * 20),
                    timeout=120)
                with pytest.raises(grpc.RpcError) as full:
                    stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="b", name="n"), timeout=300)
                assert full.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "failed and was removed: No space left on device" in full.value.details()
                assert list(small.iterdir()) == [], "no partial backup is left on the full disk"
                status = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
                assert status.document_count == 1
        finally:
            handle.stop(1.0)
            engine.close()
    finally:
        subprocess.run(["umount", str(small)], check=True)
