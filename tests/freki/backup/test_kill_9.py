"""kill -9 during a backup and during a restore: no partial backup is found under its name or restored, and no
half-restored data dir is ever served. Real ``freki serve`` and ``freki restore`` processes; ``WOLF_FAULT_POINT``
(``wolf_service.faults``) makes each SIGKILL itself at the dangerous point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2

from freki.backup.manifest import BackupInvalid
from freki.backup.source import BackupSource
from tests.freki.freki_process_support import ROOT, FrekiProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def freki(*args: str, fault: str = "none") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'protos'}", "HF_HUB_OFFLINE": "1",
           "WOLF_FAULT_POINT": fault}
    return subprocess.run([sys.executable, "-m", "freki.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def count(server: FrekiProcess) -> int:
    return server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30).document_count


def test_kill_9_during_backup_and_during_restore(tmp_path: Path) -> None:
    backups, log = tmp_path / "backups", tmp_path / "freki.log"
    config = tmp_path / "freki.json"
    config.write_text(json.dumps({"data_dir": str(tmp_path / "data"), "backup": {"dir": str(backups)},
                                  "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20}}))
    server = FrekiProcess(config, log, fault="backup.copied")
    for n in range(3):
        server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=f"d{n}", document_id=f"doc-{n}", content=f"Lighthouse {n} logs the tide and the wind. " * 10),
            timeout=120)
    with pytest.raises(grpc.RpcError):  # the server dies while the files are being copied
        server.stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="b", name="nightly"), timeout=120)
    assert server.wait_dead() == -9
    assert not (backups / "nightly").exists(), "a killed backup is never found under its name"
    leftovers = list(backups.iterdir())
    assert [p.name.startswith(".nightly.part-") for p in leftovers] == [True]
    with pytest.raises(BackupInvalid, match="no manifest.json: it is incomplete"):
        BackupSource(leftovers[0])

    server = FrekiProcess(config, log)  # the served data dir was not harmed
    try:
        assert count(server) == 3
        made = freki("backup", "--address", server.address, "--name", "nightly", "--tar")
    finally:
        server.stop()
    assert made.returncode == 0, made.stderr[-2000:]
    backup = backups / "nightly.tar.gz"
    assert made.stdout.startswith(f"{backup}: 3 documents") and "writes paused" in made.stdout
    again = freki("backup", "--address", "127.0.0.1:1", "--timeout", "5")
    assert again.returncode == 3 and "UNAVAILABLE" in again.stderr
    target = tmp_path / "restored"
    killed = freki("restore", str(backup), "--config", str(config), "--data-dir", str(target), "--no-erasure-log",
                   fault="restore.extracted")
    assert killed.returncode == -9 and (target / ".restore-incomplete").exists()

    refused = freki("serve", "--config", str(config), "--data-dir", str(target), "--port", "0")
    assert refused.returncode == 3, refused.stderr[-2000:]
    assert "holds an unfinished restore" in refused.stderr
    again = freki("restore", str(backup), "--config", str(config), "--data-dir", str(target), "--no-erasure-log")
    assert again.returncode == 1 and "not empty (it holds an unfinished restore)" in again.stderr

    shutil.rmtree(target)
    done = freki("restore", str(backup), "--config", str(config), "--data-dir", str(target), "--no-erasure-log")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "restored 3 documents" in done.stdout
    restored_config = tmp_path / "restored.json"
    restored_config.write_text(json.dumps({**json.loads(config.read_text()), "data_dir": str(target)}))
    server = FrekiProcess(restored_config, log)
    try:
        assert count(server) == 3
    finally:
        server.stop()
