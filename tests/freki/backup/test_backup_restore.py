"""Backup while serving and indexing, restore into a new data dir: every acknowledged document comes back
identical (ids, chunk texts, scores of a query set); an owner erased after the backup does not come back —
not in any file of the restored data dir, not in any answer. Real server, engine and model."""

from __future__ import annotations

import threading
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.backup.restore import restore
from freki.engine import FrekiEngine
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration

TOPICS = ["glacier hiking routes in Norway", "sourdough bread fermentation", "rust borrow checker lifetimes",
          "beekeeping in early spring", "tidal energy turbines", "medieval bookbinding techniques"]
QUERIES = ["how long should dough ferment", "hiking on a glacier", "lifetimes and borrowing", "hive inspection"]


def body(n: int, extra: str = "") -> str:
    topic = TOPICS[n % len(TOPICS)]
    return (f"# Note {n} on {topic}\n\n" + f"This note {n} explains {topic} in detail. {extra} " * 12
            + f"\n\n## More\n\nA second section about {topic}, numbered {n}.")


def on_disk(folder: Path, needle: str) -> list[str]:
    raw = needle.encode()
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and raw in p.read_bytes())


def snapshot_of(engine: FrekiEngine, tenant: str) -> dict[str, list[tuple[str, str]]]:
    """Each document of ``tenant``: its chunks' (id, text) in order."""
    return {r.document_id: [(p.id, str(p.payload.get("content", ""))) for p in engine.chunks_of(tenant, r.document_id)]
            for r in engine.registry.iterate(tenant)}


def scores(stub: freki_pb2_grpc.FrekiServiceStub, tenant: str) -> list[list[tuple[str, int, float]]]:
    out = []
    for query in QUERIES:
        reply = stub.RetrieveContext(common_pb2.WolfRequest(
            request_id="q", model_type=common_pb2.RAG, prompt=query, tenant_id=tenant,
            # Dense: a cosine score depends on the two vectors only (sparse IDF moves with the collection).
            retrieval=common_pb2.RetrievalOptions(top_k=6, mode=common_pb2.SEARCH_MODE_DENSE)), timeout=60)
        hits = [(d.chunk_id, d.chunk_index, round(d.relevance_score, 5)) for d in reply.rag_context.documents]
        out.append(sorted(hits, key=lambda h: (-h[2], h[0])))  # equal texts tie: any order is right
    return out


def test_backup_while_indexing_then_erase_then_restore(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    settings = freki_settings(tmp_path / "data", backup={"dir": tmp_path / "backups"},
                              gdpr={"erasure_log": tmp_path / "erasures.jsonl"})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    acknowledged: dict[str, str] = {}
    stop = threading.Event()
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)

            def index(doc: str, text: str, tenant: str = "main", owner: str = "", **kw: object) -> None:
                stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id=doc, document_id=doc, tenant_id=tenant, owner_id=owner, content=text,
                    **kw), timeout=120)

            for n in range(8):
                index(f"main-{n}", body(n))
            index("alice-diary", body(1, "Alice hides CANARYALICETEXT here."), owner="alice",
                  metadata={"city": "CANARYALICECITY"})
            index("bob-notes", body(2, "Bob's garden."), owner="bob")

            def writer() -> None:  # tenant "live" is written to while the backup runs
                n = 0
                while not stop.is_set():
                    index(f"live-{n}", body(n + 3), tenant="live")
                    acknowledged[f"live-{n}"] = "acked"
                    n += 1

            for bad in ("../../etc", "a/b", ".hidden", "x.tar", "x" * 200):
                with pytest.raises(grpc.RpcError) as refused:
                    stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="bad", name=bad), timeout=60)
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "is not a backup name" in refused.value.details()
            assert list((tmp_path / "backups").glob("*")) == []

            thread = threading.Thread(target=writer)
            thread.start()
            while len(acknowledged) < 2:
                stop.wait(0.1)
            acked_before = set(acknowledged)
            reply = stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="b", name="nightly", tar=True),
                                      timeout=600)
            stop.set()
            thread.join()
            assert reply.path == str(tmp_path / "backups" / "nightly.tar.gz") and reply.documents >= 12
            assert reply.write_pause_ms >= 0 and reply.files > 10

            main_chunks = snapshot_of(engine, "main")
            main_scores = scores(stub, "main")
            live_chunks = snapshot_of(engine, "live")
            # After the backup: alice is erased, one main document is added.
            stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id="e", owner_id="alice", tenant_id="main"),
                                 timeout=300)
            index("main-late", body(5, "written after the backup"))
    finally:
        stop.set()
        handle.stop(1.0)
        engine.close()

    target = freki_settings(tmp_path / "restored", gdpr={"erasure_log": tmp_path / "erasures.jsonl"})
    report = restore(Path(reply.path), target)
    assert report.reapplied.entries == 1 and report.reapplied.keys_destroyed == 1
    restored_dir = tmp_path / "restored"
    for canary in ("CANARYALICETEXT", "CANARYALICECITY", "alice-diary"):
        assert on_disk(restored_dir, canary) == [], f"{canary} came back with the restore"

    handle, engine = build_server(target, engine=FrekiEngine(target, embedder=embedder))
    try:
        assert engine.repair_report.counts.get("unreadable_records", 0) == 0, "the restore left nothing to repair"
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            expected_main = {k: v for k, v in main_chunks.items() if k != "alice-diary"}
            assert snapshot_of(engine, "main") == expected_main, "ids and chunk texts identical, alice gone"
            restored_live = snapshot_of(engine, "live")
            assert acked_before <= set(restored_live), "every document acknowledged before the backup is there"
            assert all(restored_live[d] == live_chunks[d] for d in restored_live), "and identical to the original"
            alice_chunks = {chunk_id for chunk_id, _ in main_chunks["alice-diary"]}
            want = [[hit for hit in hits if hit[0] not in alice_chunks][:4] for hits in main_scores]
            assert [hits[:4] for hits in scores(stub, "main")] == want, "same chunks, same scores, alice's gone"
            for query in ("Alice hides", "CANARYALICETEXT", "glacier hiking routes"):
                for tenant in ("main", "live"):
                    hits = stub.RetrieveContext(common_pb2.WolfRequest(
                        request_id="q", model_type=common_pb2.RAG, prompt=query, tenant_id=tenant), timeout=60)
                    assert all(d.document_id != "alice-diary" and "CANARYALICE" not in d.content
                               for d in hits.rag_context.documents)
            with pytest.raises(grpc.RpcError) as missing:
                stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="alice-diary",
                                                              tenant_id="main"), timeout=30)
            assert missing.value.code() == grpc.StatusCode.NOT_FOUND
            assert "main-late" not in snapshot_of(engine, "main"), "the backup's state, not the later one"
    finally:
        handle.stop(1.0)
        engine.close()
