"""Master-key rotation of the key store (``freki keys rotate``), with real ``freki serve`` processes: every
owner's text stays readable under the new key, the old key no longer opens the store, an erased owner stays
erased, ``kill -9`` before and after the rotation's commit leaves a store that opens with exactly one of the
two keys, and a backup taken before the rotation restores with the old key given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from wolf.v1 import common_pb2, freki_pb2

from freki.store.errors import KeyStoreMismatch
from freki.store.keys import KeyStore
from freki.store.master_key import master_key_id, read_master_key
from tests.freki.freki_process_support import ROOT, FrekiProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OWNERS = {"alice": "CANARYALICE", "bob": "CANARYBOB", "carol": "CANARYCAROL"}


def freki(*args: str, fault: str = "none") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'protos'}", "HF_HUB_OFFLINE": "1",
           "WOLF_FAULT_POINT": fault}
    return subprocess.run([sys.executable, "-m", "freki.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def write_config(path: Path, data_dir: Path, key: Path, tmp_path: Path) -> Path:
    path.write_text(json.dumps({
        "data_dir": str(data_dir), "backup": {"dir": str(tmp_path / "backups")},
        "gdpr": {"master_key_file": str(key), "erasure_log": str(tmp_path / "erasures.jsonl")},
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20}}))
    return path


def found(server: FrekiProcess, canary: str) -> set[str]:
    """The documents whose retrieved text holds ``canary``."""
    reply = server.stub.RetrieveContext(common_pb2.WolfRequest(
        request_id="q", model_type=common_pb2.RAG, prompt=f"{canary} lighthouse keeper", tenant_id="t",
        retrieval=common_pb2.RetrievalOptions(top_k=10)), timeout=60)
    return {d.document_id for d in reply.rag_context.documents if canary in d.content}


def on_disk(folder: Path, needle: str) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes())


def opens_with(keys: Path, key: Path) -> bool:
    """Whether the key store opens with ``key`` and every data key in it unwraps."""
    try:
        store = KeyStore(keys, master_key=read_master_key(key))
    except KeyStoreMismatch:
        return False
    try:
        return all(store.get(k) is not None for k in store.ids())
    finally:
        store.close()


def test_rotate_the_master_key(tmp_path: Path) -> None:
    old_key, new_key, log = tmp_path / "old.key", tmp_path / "new.key", tmp_path / "freki.log"
    old_key.write_text(os.urandom(32).hex())
    data = tmp_path / "data"
    config_old = write_config(tmp_path / "old.json", data, old_key, tmp_path)
    config_new = write_config(tmp_path / "new.json", data, new_key, tmp_path)
    keys = data / "keys.sqlite"

    server = FrekiProcess(config_old, log)
    try:
        for owner, canary in OWNERS.items():
            server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id=owner, document_id=f"{owner}-notes", tenant_id="t", owner_id=owner,
                content=f"The lighthouse keeper {canary} logs the tide and the wind. " * 8), timeout=120)
        backup = server.stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="b", name="before"), timeout=300)
        server.stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id="e", owner_id="alice", tenant_id="t"),
                                    timeout=300)
        busy = freki("keys", "rotate", "--config", str(config_old), "--new-master-key-file", str(new_key),
                     "--generate")
        assert busy.returncode == 1 and "open in another process" in busy.stderr, busy.stderr[-2000:]
        assert not new_key.exists(), "a refused rotation creates nothing"
    finally:
        server.stop()

    # kill -9 after every key was re-wrapped, before the commit: the old key's set, whole.
    killed = freki("keys", "rotate", "--config", str(config_old), "--new-master-key-file", str(new_key),
                   "--generate", fault="keys.rotate.rewrapped")
    assert killed.returncode == -9 and new_key.exists()
    assert opens_with(keys, old_key) and not opens_with(keys, new_key)
    # kill -9 right after the commit: the new key's set, whole; running the command again finishes nothing twice.
    killed = freki("keys", "rotate", "--config", str(config_old), "--new-master-key-file", str(new_key),
                   fault="keys.rotate.committed")
    assert killed.returncode == -9
    assert opens_with(keys, new_key) and not opens_with(keys, old_key)
    again = freki("keys", "rotate", "--config", str(config_old), "--new-master-key-file", str(new_key))
    assert again.returncode == 0 and "already wrapped with master key" in again.stdout, again.stderr[-2000:]
    new_id, old_id = master_key_id(read_master_key(new_key)), master_key_id(read_master_key(old_key))
    assert freki("keys", "id", str(new_key)).stdout.strip() == new_id

    assert FrekiProcess.run_to_exit(config_old, log) == 3, "the retired master key no longer opens the store"
    assert f"wrapped with master key {new_id}" in log.read_text()
    server = FrekiProcess(config_new, log)
    try:
        assert found(server, "CANARYBOB") == {"bob-notes"} and found(server, "CANARYCAROL") == {"carol-notes"}
        assert found(server, "CANARYALICE") == set(), "an erased owner stays erased through a rotation"
        server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="d", document_id="dave-notes", tenant_id="t", owner_id="dave",
            content="The lighthouse keeper CANARYDAVE logs the tide. " * 8), timeout=120)
    finally:
        server.stop()
    assert on_disk(data, "CANARYALICE") == [] and opens_with(keys, new_key)

    # A backup taken before the rotation needs the old key; the restored store is re-wrapped with the new one.
    assert json.loads((Path(backup.path) / "manifest.json").read_text())["source"]["master_key_id"] == old_id
    restored = tmp_path / "restored"
    refused = freki("restore", backup.path, "--config", str(config_new), "--data-dir", str(restored))
    assert refused.returncode == 1 and f"wrapped with master key {old_id}" in refused.stderr, refused.stderr[-2000:]
    assert not restored.exists() or not any(restored.iterdir())
    done = freki("restore", backup.path, "--config", str(config_new), "--data-dir", str(restored),
                 "--master-key-file", str(old_key))
    assert done.returncode == 0 and "1 entries re-applied" in done.stdout, done.stderr[-2000:]
    assert opens_with(restored / "keys.sqlite", new_key) and not opens_with(restored / "keys.sqlite", old_key)
    assert on_disk(restored, "CANARYALICE") == []
    write_config(config_new, restored, new_key, tmp_path)
    server = FrekiProcess(config_new, log)
    try:
        assert found(server, "CANARYBOB") == {"bob-notes"} and found(server, "CANARYALICE") == set()
    finally:
        server.stop()


def test_bad_rotations_are_refused_and_change_nothing(tmp_path: Path) -> None:
    old_key, log = tmp_path / "old.key", tmp_path / "freki.log"
    old_key.write_text(os.urandom(32).hex())
    config = write_config(tmp_path / "freki.json", tmp_path / "data", old_key, tmp_path)
    no_store = freki("keys", "rotate", "--config", str(config), "--new-master-key-file", str(tmp_path / "n.key"),
                     "--generate")
    assert no_store.returncode == 1 and "no key store at" in no_store.stderr and not (tmp_path / "n.key").exists()

    store = KeyStore(tmp_path / "data" / "keys.sqlite", master_key=read_master_key(old_key))
    store.get_or_create("g1", "t", "alice", "d1")
    store.close()
    short = tmp_path / "short.key"
    short.write_bytes(b"12345")
    refusals = {
        "must hold 32 bytes or 64 hex digits (it holds 5 bytes)": ("--new-master-key-file", str(short)),
        "exists; --generate writes a new file only": ("--new-master-key-file", str(short), "--generate"),
        "is gdpr.master_key_file itself": ("--new-master-key-file", str(old_key)),
    }
    for message, args in refusals.items():
        refused = freki("keys", "rotate", "--config", str(config), *args)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr[-2000:]
    assert opens_with(tmp_path / "data" / "keys.sqlite", old_key), "nothing changed"
    bad_id = freki("keys", "id", str(short))
    assert bad_id.returncode == 1 and "must hold 32 bytes" in bad_id.stderr

    write_config(config, tmp_path / "data", short, tmp_path)  # a start with an unusable key file: one line, exit 3
    assert FrekiProcess.run_to_exit(config, log) == 3
    assert "freki cannot start: gdpr.master_key_file: master key file" in log.read_text()
    assert "Traceback" not in log.read_text()
