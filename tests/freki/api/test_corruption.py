"""Flipped bytes in each kind of file under a real Freki's data dir, and what a restarted ``freki serve`` does:

* dense vectors, chunk payloads: the corrupt chunks are quarantined (never returned, listed in GetIndexStatus),
  queries keep answering, and the documents are healed from their kept sources;
* registry payloads, the write-ahead log, segment metadata, the key store: one clear ERROR line naming the file
  and what to do, exit code 3, no traceback (a supervisor's restart loop says the same thing each time).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from wolf.v1 import common_pb2, freki_pb2

from tests.freki.freki_process_support import ROOT, FrekiProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DOCS = {
    "tide.txt": "Tide tables for the harbour list the times of high and low water.",
    "bread.txt": "The recipe for bread needs flour, water, salt and yeast, kneaded and baked.",
    "volcano.txt": "Volcanoes erupt when magma rises through cracks in the crust.",
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the three documents, written by a real Freki that was then stopped."""
    base = tmp_path_factory.mktemp("indexed")
    config = _config(base)
    server = FrekiProcess(config, base / "freki.log")
    try:
        for name, text in DOCS.items():
            server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id=name, document_id=name, content=text.encode()), timeout=120)
    finally:
        server.stop()
    return base / "data"


def _config(where: Path) -> Path:
    config = where / "freki.json"
    config.write_text(json.dumps({"data_dir": str(where / "data"), "disk": {"refuse_free_bytes": 0,
                                  "refuse_free_percent": 0, "warn_free_bytes": 0, "warn_free_percent": 0}}))
    return config


def _copy(indexed: Path, tmp_path: Path) -> Path:
    shutil.copytree(indexed, tmp_path / "data")
    return _config(tmp_path)


def _flip(path: Path, offset: int = 0, size: int = 4096) -> None:
    with path.open("r+b") as f:
        f.seek(offset)
        data = bytearray(f.read(size))
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))


def _segment(data: Path, collection: str) -> Path:
    (segment,) = (data / "qdrant" / collection / "shard" / "segments").iterdir()
    return segment


def _ask(server: FrekiProcess, text: str) -> list[tuple[str, str]]:
    reply = server.stub.RetrieveContext(common_pb2.WolfRequest(request_id="q", prompt=text, model_type=common_pb2.RAG),
                                        timeout=60)
    return [(d.document_id, d.content) for d in reply.rag_context.documents]


def _wait_healed(server: FrekiProcess) -> freki_pb2.IndexStatus:
    deadline = time.monotonic() + 180
    while True:
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        if not status.quarantined_chunks or time.monotonic() > deadline:
            return status
        time.sleep(0.5)


def test_corrupt_vectors_are_quarantined_never_served_and_healed(indexed: Path, tmp_path: Path) -> None:
    config = _copy(indexed, tmp_path)
    segment = _segment(tmp_path / "data", "freki_chunks")
    # Every chunk's vector: before, a corrupt one ranked first (score 1.0) for an unrelated question.
    _flip(segment / "vector_storage-dense" / "vectors" / "chunk_0.mmap")
    log = tmp_path / "freki.log"
    server = FrekiProcess(config, log)
    try:
        for doc_id, content in _ask(server, "how do I bake bread"):  # answers; only intact chunks, if any
            assert DOCS[doc_id] in content
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        assert status.quarantined_chunks and status.health == "degraded", status
        assert "failed its integrity check" in log.read_text()
        healed = _wait_healed(server)
        assert not healed.quarantined_chunks and healed.health == "ok", healed
        hits = _ask(server, "how do I bake bread")
        assert hits and hits[0][0] == "bread.txt" and DOCS["bread.txt"] in hits[0][1]
        assert {d for d, _ in _ask(server, "volcano magma eruption")} >= {"volcano.txt"}
    finally:
        server.stop()


def _start_fails(config: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'protos'}", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "freki.cli", "serve", "--config", str(config), "--port", "0"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr


def _registry_payloads(data: Path) -> Path:
    return _segment(data, "freki_chunks_documents") / "payload_storage" / "page_0.dat"


def _wal(data: Path) -> Path:
    return data / "qdrant" / "freki_chunks" / "shard" / "wal" / "open-1"


def _segment_metadata(data: Path) -> Path:
    return _segment(data, "freki_chunks") / "segment.json"


def _key_store(data: Path) -> Path:
    return data / "keys.sqlite"


def _wait_listed(server: FrekiProcess) -> freki_pb2.IndexStatus:
    """The status once every quarantined chunk's owner was looked up."""
    deadline = time.monotonic() + 60
    while True:
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        if all(q.heal != "pending" for q in status.quarantined_chunks) or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


@pytest.mark.parametrize(("where", "named"), [
    (_registry_payloads, "freki_chunks_documents"), (_wal, "wal"), (_segment_metadata, "segments"),
    (_key_store, "keys.sqlite"),
], ids=["registry", "wal", "segment-metadata", "key-store"])
def test_unreadable_files_stop_the_start_with_one_clear_error(indexed: Path, tmp_path: Path,
                                                              where: Callable[[Path], Path], named: str) -> None:
    config = _copy(indexed, tmp_path)
    target = where(tmp_path / "data")
    _flip(target, size=min(4096, target.stat().st_size))
    code, stderr = _start_fails(config)
    errors = [json.loads(line)["msg"] for line in stderr.splitlines()
              if line.startswith("{") and json.loads(line)["level"] == "ERROR"]
    assert code == 3, stderr[-3000:]
    assert len(errors) == 1 and named in errors[0] and str(tmp_path / "data") in errors[0], errors
    assert "restore" in errors[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize("size", [4096, 512])
def test_a_query_never_fails_because_of_a_bad_chunk_payload(indexed: Path, tmp_path: Path, size: int) -> None:
    """Payload bytes the engine cannot decode (before: every query touching one failed with INTERNAL): the chunks
    are quarantined, listed with their document and why they are not healed, and queries keep answering."""
    config = _copy(indexed, tmp_path)
    _flip(_segment(tmp_path / "data", "freki_chunks") / "payload_storage" / "page_0.dat", size=size)
    server = FrekiProcess(config, tmp_path / "freki.log")
    try:
        for question in ("how do I bake bread", "tides in the harbour", "volcano"):
            for doc_id, content in _ask(server, question):
                assert DOCS[doc_id] in content
        status = _wait_listed(server)
        assert status.quarantined_chunks and status.health == "degraded"
        for chunk in status.quarantined_chunks:
            assert chunk.document_id in DOCS and chunk.heal.startswith("failed: the engine cannot decode"), chunk
        # Writes to the collection still work (the healer never tried to delete an undecodable point).
        server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id="n", document_id="note.txt", content=b"Sourdough bread rises overnight."), timeout=120)
        assert "note.txt" in {d for d, _ in _ask(server, "sourdough bread overnight")}
        listed = server.stub.ListDocuments(freki_pb2.ListDocumentsRequest(page_size=10), timeout=30)
        assert {d.document_id for d in listed.documents} == {*DOCS, "note.txt"}  # the registry is intact
    finally:
        server.stop()


def test_the_quarantine_is_listed_again_after_a_restart(indexed: Path, tmp_path: Path) -> None:
    """Chunks quarantined before a restart (here: payloads the engine cannot decode, never healed) are listed at
    the next start before any read meets them again (before: the list was empty until a query or the scrub)."""
    config = _copy(indexed, tmp_path)
    _flip(_segment(tmp_path / "data", "freki_chunks") / "payload_storage" / "page_0.dat", size=4096)
    server = FrekiProcess(config, tmp_path / "freki.log")
    try:
        for question in ("how do I bake bread", "tides in the harbour", "volcano"):
            _ask(server, question)
        before = {(q.chunk_id, q.document_id, q.heal) for q in _wait_listed(server).quarantined_chunks}
    finally:
        server.stop()
    assert before
    server = FrekiProcess(config, tmp_path / "freki.log")
    try:
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)
        assert {(q.chunk_id, q.document_id, q.heal) for q in status.quarantined_chunks} == before
        assert status.health == "degraded"
    finally:
        server.stop()
