"""Restore a backup of an embedded-engine Freki into a Freki on a Qdrant server: every acknowledged document
identical (ids, chunks, a query set's top results and scores), an owner erased after the backup absent from
every answer and every stored payload, a non-empty server collection refused. The "server" is qdrant-client's
on-disk local mode behind the real ``RemoteStore`` (no Qdrant server binary on the test machine); real
engine, gRPC server and model."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from qdrant_client import QdrantClient
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.backup import remote_target
from freki.backup.restore import restore
from freki.engine import FrekiEngine
from freki.engine.restore_marker import RESTORE_MARKER
from freki.settings import FrekiSettings
from freki.store.errors import StoreUnavailable
from tests.freki.backup.test_backup_restore import body, scores, snapshot_of
from tests.freki.backup.test_kill_9 import freki
from tests.freki.conftest import freki_settings
from wolf_service.errors import FailedPrecondition

pytestmark = pytest.mark.integration


def stored_payloads(path: Path) -> str:
    """Every payload of every collection in the local-mode store at ``path``, as one text."""
    client = QdrantClient(path=str(path))
    try:
        out = []
        for collection in client.get_collections().collections:
            offset = None
            while True:
                records, offset = client.scroll(collection.name, limit=256, offset=offset, with_payload=True)
                out += [json.dumps(r.payload) for r in records]
                if offset is None:
                    break
        return "\n".join(out)
    finally:
        client.close()


def test_restore_into_a_qdrant_server_reapplies_erasure_and_refuses_live_collections(
        tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    erasures = {"erasure_log": tmp_path / "erasures.jsonl"}
    settings = freki_settings(tmp_path / "data", backup={"dir": tmp_path / "backups"}, gdpr=erasures)
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            for n, owner in enumerate(["bob", "bob", "bob", "alice"]):
                extra = "Alice hides CANARYALICETEXT here." if owner == "alice" else ""
                stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id=f"d{n}", document_id=f"{owner}-{n}", tenant_id="main", owner_id=owner,
                    content=body(n, extra)), timeout=120)
            reply = stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="b", name="nightly"), timeout=600)
            before_chunks, before_scores = snapshot_of(engine, "main"), scores(stub, "main")
            stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id="e", owner_id="alice", tenant_id="main"),
                                 timeout=300)
    finally:
        handle.stop(1.0)
        engine.close()

    server = tmp_path / "qdrant-server"
    target = freki_settings(tmp_path / "restored", gdpr=erasures, store={"backend": "remote", "url": str(server)})
    report = restore(Path(reply.path), target)
    assert report.reapplied.keys_destroyed == 1 and report.reapplied.points_deleted > 0
    counted = {k.removeprefix("points:"): v for k, v in report.manifest.counts.items() if k.startswith("points:")}
    assert set(counted) == {"freki_chunks", "freki_chunks_documents", "freki_chunks_sources", "freki_chunks_links"}
    assert {u.collection: u.points for u in report.uploaded}["freki_chunks"] < counted["freki_chunks"], "erased"
    assert {u.collection for u in report.uploaded} >= {"freki_chunks", "freki_chunks_documents"}
    assert not (tmp_path / "restored" / "qdrant").exists(), "the staging copy of the collections is gone"
    assert not (tmp_path / "restored" / RESTORE_MARKER).exists()
    assert "CANARYALICE" not in stored_payloads(server) and "alice-3" not in stored_payloads(server)

    handle, engine = build_server(target, engine=FrekiEngine(target, embedder=embedder))
    try:
        assert engine.repair_report.counts.get("unreadable_records", 0) == 0
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            assert snapshot_of(engine, "main") == {k: v for k, v in before_chunks.items() if k != "alice-3"}
            alice = {chunk_id for chunk_id, _ in before_chunks["alice-3"]}
            want = [[hit for hit in hits if hit[0] not in alice][:3] for hits in before_scores]
            assert [hits[:3] for hits in scores(stub, "main")] == want, "same chunks, same scores, alice's gone"
            for query in ("Alice hides", "CANARYALICETEXT", "beekeeping in early spring"):
                hits = stub.RetrieveContext(common_pb2.WolfRequest(
                    request_id="q", model_type=common_pb2.RAG, prompt=query, tenant_id="main"), timeout=60)
                assert all(
                    d.document_id != "alice-3" and "CANARYALICE" not in d.content for d in hits.rag_context.documents)
    finally:
        handle.stop(1.0)
        engine.close()

    # kill -9 after the first collection reached the server, then the same command again: it starts over.
    killed_dir = tmp_path / "restored-killed"
    config = tmp_path / "other.json"
    config.write_text(json.dumps({"data_dir": str(killed_dir), "gdpr": {"erasure_log": str(erasures["erasure_log"])},
                                  "store": {"backend": "remote", "url": str(server), "collection": "other"}}))
    command = ("restore", reply.path, "--config", str(config))
    assert freki(*command, fault="restore.uploaded").returncode == -9
    assert (killed_dir / RESTORE_MARKER).exists()
    with pytest.raises(StoreUnavailable, match="unfinished restore"):
        FrekiEngine(FrekiSettings.load(config), embedder=embedder)
    done = freki(*command)
    assert done.returncode == 0, done.stderr
    assert "other_documents on" in done.stdout and not (killed_dir / RESTORE_MARKER).exists()
    assert all(f"other{u.collection[len('freki_chunks'):]} on {server}: {u.points:,} points" in done.stdout
               for u in report.uploaded), "the same points under the configured collection names"

    again = freki_settings(tmp_path / "restored-again", gdpr=erasures, store={"backend": "remote", "url": str(server)})
    with pytest.raises(FailedPrecondition, match="--replace-collections"):
        restore(Path(reply.path), again)
    assert not (tmp_path / "restored-again").exists(), "refused before anything was written"

    def mismatch(*_: object) -> None:  # the seam: a server copy that does not verify
        raise FailedPrecondition("collection differs from the backup's after the copy")

    with monkeypatch.context() as patch:
        patch.setattr(remote_target, "_verify", mismatch)
        with pytest.raises(FailedPrecondition, match="differs"):
            restore(Path(reply.path), again, replace_collections=True)
    assert (tmp_path / "restored-again" / RESTORE_MARKER).exists(), "the server holds part of it: never served"
    replaced = restore(Path(reply.path), again)  # the marker names the collections: no flag needed to redo them
    assert replaced.uploaded == report.uploaded, "the same points, the same digests"
    assert "CANARYALICE" not in stored_payloads(server)
