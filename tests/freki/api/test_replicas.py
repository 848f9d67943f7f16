"""Two Freki replicas writing and reading one collection (``store.shared``; docs/scaling.md).

Both replicas talk to one real engine (``tests.freki.shared_engine_support``: no Qdrant server runs on this box).
Each has its own gRPC server, engine, locks, caches and hidden generations; they share the collection and
the key store file, as replicas on one Qdrant cluster do.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from tests.freki.conftest import freki_settings
from tests.freki.shared_engine_support import SharedEngine, shared_store_settings

pytestmark = pytest.mark.integration


def replica_settings(tmp: Path, name: str, shared: bool = True):  # type: ignore[no-untyped-def]
    return freki_settings(tmp / name, **shared_store_settings(tmp, shared))


@pytest.fixture
def shared_engine(monkeypatch: pytest.MonkeyPatch) -> SharedEngine:
    return SharedEngine().install(monkeypatch)


@pytest.fixture
def replicas(tmp_path: Path, shared_engine: SharedEngine, embedder) -> Iterator[list[FrekiEngine]]:  # type: ignore[no-untyped-def]
    engines = [FrekiEngine(replica_settings(tmp_path, n), embedder=embedder) for n in ("a", "b")]
    try:
        yield engines
    finally:
        for engine in engines:
            engine.close()


def text(version: str, sentences: int = 6) -> str:
    return " ".join(f"Version {version} says the harbour light number {i} burns whale oil at night."
                    for i in range(sentences))


def visible_versions(engine: FrekiEngine, doc: str) -> set[str]:
    return {str(p.payload["content"]).split()[1] for p in engine.chunks_of("default", doc)}


def assert_whole(engine: FrekiEngine, doc: str) -> str:
    """The document is exactly one committed version, with every chunk its record counts."""
    record = engine.get_document("default", doc)
    chunks = engine.chunks_of("default", doc)
    assert len(chunks) == record.chunk_count > 0
    assert {p.payload["generation"] for p in chunks} == {record.generation}
    versions = visible_versions(engine, doc)
    assert len(versions) == 1, versions
    return versions.pop()


def race(first: FrekiEngine, second: FrekiEngine, doc: str) -> None:
    """``second`` writes its version; while its chunks are written but not committed, ``first`` indexes
    and commits another version of the same document; then ``second`` commits."""
    put = second.registry.put

    def put_after_the_other_commits(record):  # type: ignore[no-untyped-def]
        first.index(IndexInput("default", doc, text("first")))
        put(record)

    second.registry.put = put_after_the_other_commits  # type: ignore[method-assign]
    try:
        second.index(IndexInput("default", doc, text("second")))
    finally:
        second.registry.put = put  # type: ignore[method-assign]


def test_interleaved_commits_of_one_document_leave_it_whole(replicas: list[FrekiEngine]) -> None:
    a, b = replicas
    a.index(IndexInput("default", "harbour.md", text("zero")))
    race(a, b, "harbour.md")
    # the last commit wins on both replicas, whole; the loser's version is invisible
    assert assert_whole(a, "harbour.md") == assert_whole(b, "harbour.md") == "second"


def test_without_shared_mode_the_same_race_breaks_the_document(
    tmp_path: Path, shared_engine: SharedEngine, embedder,  # type: ignore[no-untyped-def]
) -> None:
    """Control: the race above is real. A replica that believes it writes alone deletes the other's chunks."""
    a, b = (FrekiEngine(replica_settings(tmp_path, n, shared=False), embedder=embedder) for n in ("a", "b"))
    try:
        a.index(IndexInput("default", "harbour.md", text("zero")))
        race(a, b, "harbour.md")
        record = b.get_document("default", "harbour.md")
        assert len(b.chunks_of("default", "harbour.md")) < record.chunk_count
    finally:
        a.close()
        b.close()


def test_a_restarting_replica_leaves_the_others_work_in_progress(
    tmp_path: Path, replicas: list[FrekiEngine], embedder,  # type: ignore[no-untyped-def]
) -> None:
    a, b = replicas
    put = a.registry.put
    restarted: list[FrekiEngine] = []

    def put_after_a_restart(record):  # type: ignore[no-untyped-def]
        # a third replica starts (runs its consistency pass) while a's chunks are written, not committed
        restarted.append(FrekiEngine(replica_settings(tmp_path, "c"), embedder=embedder))
        put(record)

    a.registry.put = put_after_a_restart  # type: ignore[method-assign]
    try:
        a.index(IndexInput("default", "tide.md", text("one")))
    finally:
        a.registry.put = put  # type: ignore[method-assign]
        for engine in restarted:
            engine.close()
    assert restarted[0].repair_report.counts.get("orphan_chunks", 0) == 0
    assert assert_whole(b, "tide.md") == "one"


def rid() -> str:
    return uuid.uuid4().hex


def test_two_replicas_index_and_retrieve_one_tenant_concurrently(replicas: list[FrekiEngine]) -> None:
    """Over gRPC: each replica indexes its own documents and rewrites shared ones while both answer
    queries; no update is lost, no document is ever seen in two versions or with duplicate chunks."""
    handles = [build_server(engine.settings, engine=engine)[0] for engine in replicas]
    channels = [grpc.insecure_channel(h.address) for h in handles]
    stubs = [freki_pb2_grpc.FrekiServiceStub(c) for c in channels]
    shared_docs = [f"shared-{i}.md" for i in range(3)]
    errors: list[str] = []
    stop = threading.Event()

    def writer(n: int) -> None:
        stub = stubs[n]
        try:
            for round_ in range(3):
                for i in range(4):
                    stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                        request_id=rid(), document_id=f"own-{n}-{i}.md", content=text(f"own{n}r{round_}")),
                        timeout=120)
                for doc in shared_docs:
                    stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                        request_id=rid(), document_id=doc, content=text(f"r{n}v{round_}")), timeout=120)
        except grpc.RpcError as exc:
            errors.append(f"writer {n}: {exc.code()} {exc.details()}")

    def reader(n: int) -> None:
        stub = stubs[n]
        while not stop.is_set():
            try:
                resp = stub.RetrieveContext(common_pb2.WolfRequest(
                    request_id=rid(), model_type=common_pb2.RAG, prompt="harbour light whale oil at night",
                    retrieval=common_pb2.RetrievalOptions(top_k=50)), timeout=60)
            except grpc.RpcError as exc:
                errors.append(f"reader {n}: {exc.code()} {exc.details()}")
                return
            seen: dict[str, set[str]] = {}
            keys = [(d.document_id, d.content) for d in resp.rag_context.documents]
            if len(keys) != len(set(keys)):
                errors.append(f"reader {n}: duplicate chunks {keys}")
            for d in resp.rag_context.documents:
                seen.setdefault(d.document_id, set()).add(d.content.split()[1])
            mixed = {doc: v for doc, v in seen.items() if len(v) > 1}
            if mixed:
                errors.append(f"reader {n}: documents in two versions at once: {mixed}")

    threads = [threading.Thread(target=writer, args=(n,)) for n in (0, 1)]
    readers = [threading.Thread(target=reader, args=(n,)) for n in (0, 1)]
    try:
        for t in [*threads, *readers]:
            t.start()
        for t in threads:
            t.join(timeout=600)
        stop.set()
        for t in readers:
            t.join(timeout=60)
        assert not errors, errors[:5]
        a, b = replicas
        for n in (0, 1):
            for i in range(4):
                assert assert_whole(a, f"own-{n}-{i}.md") == assert_whole(b, f"own-{n}-{i}.md") == f"own{n}r2"
        for doc in shared_docs:
            # whichever replica committed last, both serve that version whole
            assert assert_whole(a, doc) == assert_whole(b, doc) in {"r0v2", "r1v2"}
        assert a.status("default").document_count == b.status("default").document_count == 11
    finally:
        for c in channels:
            c.close()
        for h in handles:
            h.stop(1.0)


def test_odin_spreads_calls_over_replicas_and_skips_one_that_is_down(replicas: list[FrekiEngine]) -> None:
    """One Odin target naming both replicas, round_robin: both serve; with one stopped, calls still succeed."""
    from odin_client import OdinClient, OdinSettings

    handles = [build_server(engine.settings, engine=engine)[0] for engine in replicas]
    calls = [0, 0]
    for n, engine in enumerate(replicas):
        original = engine.retrieve

        def counted(query, _n=n, _original=original):  # type: ignore[no-untyped-def]
            calls[_n] += 1
            return _original(query)

        engine.retrieve = counted  # type: ignore[method-assign]
    ports = [h.address.rsplit(":", 1)[1] for h in handles]
    target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)
    replicas[0].index(IndexInput("default", "harbour.md", text("one")))
    try:
        with OdinClient(OdinSettings(freki_target=target, load_balancing="round_robin",
                                     retry_initial_backoff_s=0.05)) as client:
            for _ in range(10):
                assert client.retrieve("harbour light").sources
            assert calls[0] >= 3 and calls[1] >= 3, calls
            handles[0].stop(1.0)
            before = calls[1]
            for _ in range(5):
                assert client.retrieve("whale oil").sources
            assert calls[1] == before + 5
    finally:
        for h in handles:
            h.stop(1.0)
