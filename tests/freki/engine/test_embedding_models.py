"""Type-specific embedding models on the real engine with two real models.

The second model is built here, offline, from the packaged MiniLM's weights: its transformer and a fixed
random projection to 128 dimensions (a ``Dense`` layer), saved to a temporary directory and loaded by path —
so the two models differ in dimension and routing is observable in the store. A two-layer cut of it checks
that cosines of a model with another background are aligned before results are merged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from pydantic import ValidationError
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.embed.layout import EmbeddingLayout, model_collection
from freki.engine import FrekiEngine
from freki.gdpr.erasure import erase_owner
from freki.ingest.indexing import IndexInput, document_chunks
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from freki.store import ChunkPoint, FieldMatch
from tests.freki.engine.small_models_support import SMALL_DIM, build_small_model
from wolf_service.errors import FailedPrecondition

pytestmark = pytest.mark.integration

MARKDOWN = ("# Glaciers\n\nGlaciers are slow rivers of ice that carve valleys over thousands of years. "
            "Meltwater from glaciers feeds many mountain rivers in summer.\n\n"
            "## Retreat\n\nMost alpine glaciers have lost much of their volume since 1850.")
TEXT = ("Sourdough bread rises because wild yeast and lactic acid bacteria ferment the dough. "
        "A long, cool fermentation gives the loaf its sour taste and open crumb.")


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_small_model(tmp_path_factory.mktemp("models") / "mini-128"))


def settings_for(data_dir: Path, routes: dict[str, str], **extra: object) -> FrekiSettings:
    values: dict[str, object] = {
        "host": "127.0.0.1", "port": 0, "data_dir": data_dir, "embedding_models": routes,
        # the standard model is the session's (ONNX); the small one loads with torch (no export at each start)
        "embedding_backend": "torch",
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
    }
    values.update(extra)
    return FrekiSettings(**values)  # type: ignore[arg-type]


def add(engine: FrekiEngine, doc_id: str, data: str, source: str, tenant: str = "t1", **kw: object) -> None:
    engine.index(IndexInput(tenant_id=tenant, document_id=doc_id, data=data, source=source, **kw))  # type: ignore[arg-type]


def stored_ids(engine: FrekiEngine, store_index: int, tenant: str, doc_id: str) -> list[str]:
    return [p.id for p in document_chunks(engine.chunk_stores[store_index], tenant, doc_id)]


# -- the layout (plain data) ---------------------------------------------------------------------------------
def test_layout_routes_by_metadata_then_content_type_then_standard() -> None:
    layout = EmbeddingLayout.from_routes("std", {"markdown": "small", "code": "small", "pdf": "std"}, "chunks")
    assert layout.models == ("std", "small")
    assert layout.routes == (("code", "small"), ("markdown", "small"))  # routes to the standard model dropped
    assert layout.route("markdown") == ("small", "markdown")
    assert layout.route("text", "code") == ("small", "code")  # a caller's document_type that is a route key
    assert layout.route("text", "unknown-type") == ("std", "")
    assert layout.route("text", ["code"]) == ("std", "")  # only a plain string selects
    assert layout.collection_of("std") == "chunks"
    assert layout.collection_of("small").startswith("chunks__m")
    assert layout.without({"small"}).routes == ()
    assert EmbeddingLayout("std").fingerprint() == "std"  # unchanged content hashes without routes
    assert layout.fingerprint() != layout.without({"small"}).fingerprint()
    assert len(model_collection("c" * 63, "/some/very/long/model/path" * 10)) <= 63


@pytest.mark.parametrize("routes, extra, message", [
    ({"Markdown": "m"}, {}, "embedding_models"),  # keys are lower-case type names
    ({"markdown": "bad\nname"}, {}, "embedding_models"),  # control characters
    ({"markdown": ""}, {}, "embedding_models"),
    ({"a": "m1", "b": "m2"}, {"embedding_models_max": 1}, "at most embedding_models_max=1"),
    ({f"t{i}": "m" for i in range(65)}, {}, "embedding_models"),
])
def test_hostile_model_settings_fail_at_start(routes: dict[str, str], extra: dict[str, object], message: str,
                                             tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=message):
        settings_for(tmp_path, routes, **extra)


def test_a_model_that_does_not_load_falls_back_or_fails_when_required(
    tmp_path: Path, embedder, caplog: pytest.LogCaptureFixture,  # type: ignore[no-untyped-def]
) -> None:
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(FailedPrecondition, match=r"^embedding_models \(FREKI_EMBEDDING_MODELS\).*no-such-model") as err:
        FrekiEngine(settings_for(tmp_path / "a", {"markdown": missing}, embedding_models_required=True),
                    embedder=embedder).close()
    assert "'markdown'" in str(err.value) and "FREKI_EMBEDDING_MODEL " not in str(err.value)  # not the standard one
    with caplog.at_level(logging.WARNING, "freki.engine"):
        engine = FrekiEngine(settings_for(tmp_path / "b", {"markdown": missing}), embedder=embedder)
    try:
        assert "did not load" in caplog.text and "markdown" in caplog.text
        add(engine, "md", MARKDOWN, "notes.md")
        record = engine.get_document("t1", "md")
        # the document records the model that really embedded it: the standard one
        assert (record.embedding_model, record.embedding_dimension, record.document_type) == (
            embedder.identity.name, embedder.dimension, "")
        models = engine.status("t1").models
        assert [(m.model, m.available, m.document_types) for m in models] == [
            (embedder.identity.name, True, ()), (missing, False, ("markdown",))]
    finally:
        engine.close()


def test_cosines_of_a_model_with_another_background_are_aligned_before_merging(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from freki.embed.calibration import CALIBRATION_TEXTS, CosineBackground, aligner
    from freki.embed.embedder import Embedder

    cut = Embedder(str(build_small_model(tmp_path / "cut", layers=2)), backend="torch")
    own, reference = CosineBackground.of(cut.embed), CosineBackground.of(embedder.embed)
    assert own.mean > 0.4 > 0.1 > reference.mean  # unrelated texts: ~0.63 for the cut, ~0.03 for MiniLM
    align = aligner(own, reference)
    unrelated = ["Quarterly revenue rose on cloud sales.", "Wolves hunt in packs at night."]
    raw = float(np.dot(*cut.embed(unrelated)))
    assert raw > 0.4 and abs(align(raw) - reference.mean) < 3 * reference.sd
    assert aligner(reference, reference)(0.5) == 0.5  # the standard model's cosines stay as they are
    assert len(CALIBRATION_TEXTS) == 20


# -- two real models on the edge engine -------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory, embedder, small_model: str) -> Iterator[FrekiEngine]:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings_for(tmp_path_factory.mktemp("two"), {"markdown": small_model}),
                         embedder=embedder)
    try:
        yield engine
    finally:
        engine.close()


def test_documents_go_to_their_types_model_and_collection(two_models: FrekiEngine, small_model: str) -> None:
    engine = two_models
    add(engine, "md", MARKDOWN, "glaciers.md")
    add(engine, "txt", TEXT, "bread.txt")
    md, txt = engine.get_document("t1", "md"), engine.get_document("t1", "txt")
    assert (md.embedding_model, md.embedding_dimension, md.document_type) == (small_model, SMALL_DIM, "markdown")
    assert (txt.embedding_model, txt.embedding_dimension, txt.document_type) == ("all-MiniLM-L6-v2", 384, "")
    small_points = document_chunks(engine.chunk_stores[1], "t1", "md", with_vectors=True)
    assert small_points and all(len(p.dense or []) == SMALL_DIM for p in small_points)
    assert stored_ids(engine, 0, "t1", "md") == [] and stored_ids(engine, 1, "t1", "txt") == []
    assert [len(p.dense or []) for p in engine.chunks_of("t1", "txt", with_vectors=True)] == [384]
    status = {m.model: m for m in engine.status("t1").models}
    assert status[small_model].chunk_count == md.chunk_count and status[small_model].document_count == 1
    assert status["all-MiniLM-L6-v2"].chunk_count == txt.chunk_count
    assert engine.status("t1").chunk_count == md.chunk_count + txt.chunk_count


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid"])
def test_a_query_finds_documents_of_both_models(two_models: FrekiEngine, small_model: str, mode: str) -> None:
    engine = two_models
    add(engine, "md", MARKDOWN, "glaciers.md")
    add(engine, "txt", TEXT, "bread.txt")
    for text, doc, model in (("why do glaciers retreat", "md", small_model),
                             ("how does sourdough bread rise", "txt", "all-MiniLM-L6-v2")):
        hits = engine.retrieve(Query(tenant_id="t1", text=text, top_k=5, score_threshold=0.0, mode=mode))
        assert hits and hits[0].document_id == doc and hits[0].model == model
        assert {h.document_id for h in hits} == {"md", "txt"} or mode == "sparse"
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    mmr = engine.retrieve(Query(tenant_id="t1", text="glaciers and bread", top_k=2, score_threshold=0.0,
                                mmr_diversity=0.5))
    assert {h.document_id for h in mmr} == {"md", "txt"}
    other = engine.retrieve(Query(tenant_id="t2", text="glaciers", top_k=5, score_threshold=0.0))
    assert list(other) == []  # tenants stay apart in every model's collection


def test_metadata_document_type_selects_a_model_and_a_type_change_moves_the_document(
    two_models: FrekiEngine, small_model: str,
) -> None:
    engine = two_models
    add(engine, "moving", TEXT, "moving.txt", metadata={"document_type": "markdown"})
    assert engine.get_document("t1", "moving").embedding_model == small_model
    assert stored_ids(engine, 1, "t1", "moving") and not stored_ids(engine, 0, "t1", "moving")
    add(engine, "moving", TEXT, "moving.txt")  # same text, no document_type: back to the standard model
    record = engine.get_document("t1", "moving")
    assert (record.embedding_model, record.document_type) == ("all-MiniLM-L6-v2", "")
    assert not stored_ids(engine, 1, "t1", "moving")
    assert len(stored_ids(engine, 0, "t1", "moving")) == record.chunk_count
    engine.full_reindex("t1", "moving")
    assert len(stored_ids(engine, 0, "t1", "moving")) == record.chunk_count
    assert engine.delete_document("t1", "moving") == record.chunk_count


def test_erasure_covers_every_models_collection_and_restart_is_consistent(
    tmp_path: Path, embedder, small_model: str,  # type: ignore[no-untyped-def]
) -> None:
    settings = settings_for(tmp_path, {"markdown": small_model})
    engine = FrekiEngine(settings, embedder=embedder)
    try:
        add(engine, "md", MARKDOWN, "a.md", owner_id="alice")
        add(engine, "txt", TEXT, "a.txt", owner_id="alice")
        add(engine, "bob", MARKDOWN, "b.md", owner_id="bob")
        exported = {r.document_id: len(chunks) for r, chunks in engine.export_owner("t1", "alice")}
        assert exported == {"md": engine.get_document("t1", "md").chunk_count,
                            "txt": engine.get_document("t1", "txt").chunk_count}
        erased = erase_owner(engine, "t1", "alice")
        assert erased.documents == 2
        alice = [FieldMatch("owner_id", ("alice",))]
        assert [store.count(alice) for store in engine.chunk_stores] == [0, 0]
        # an uncommitted generation left in the small model's collection (as a crash would leave it)
        orphan = document_chunks(engine.chunk_stores[1], "t1", "bob", with_vectors=True)
        engine.chunk_stores[1].upsert([ChunkPoint(id="00000000-0000-4000-8000-000000000001", dense=orphan[0].dense,
                                                  sparse=None, payload={**orphan[0].payload, "generation": "f" * 32})])
    finally:
        engine.close()
    engine = FrekiEngine(settings, embedder=embedder)
    try:
        assert engine.repair_report.counts["orphan_chunks"] == 1
        assert engine.repair_report.counts.get("incomplete_documents", 0) == 0
        assert engine.get_document("t1", "bob").embedding_model == small_model
        hits = engine.retrieve(Query(tenant_id="t1", text="glaciers retreat", top_k=3, score_threshold=0.0))
        assert hits and hits[0].document_id == "bob"
    finally:
        engine.close()


def test_two_models_on_the_remote_store_and_over_grpc(tmp_path: Path, embedder, small_model: str) -> None:  # type: ignore[no-untyped-def]
    settings = settings_for(tmp_path, {"markdown": small_model},
                            store={"backend": "remote", "url": str(tmp_path / "q")})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        add(engine, "md", MARKDOWN, "glaciers.md")
        add(engine, "txt", TEXT, "bread.txt")
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            status = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(tenant_id="t1"), timeout=30)
            assert [(m.model, m.dimension, m.standard, m.available, list(m.document_types), m.document_count)
                    for m in status.embedding_models] == [
                ("all-MiniLM-L6-v2", 384, True, True, [], 1), (small_model, SMALL_DIM, False, True, ["markdown"], 1)]
            assert status.embedding_models[1].collection == model_collection(settings.store.collection, small_model)
            info = stub.GetDocument(freki_pb2.GetDocumentRequest(tenant_id="t1", document_id="md"), timeout=30)
            assert (info.embedding_model, info.embedding_dimension, info.document_type) == (
                small_model, SMALL_DIM, "markdown")
            answer = stub.RetrieveContext(common_pb2.WolfRequest(
                request_id="q", tenant_id="t1", model_type=common_pb2.RAG, prompt="melting alpine glaciers",
                retrieval=common_pb2.RetrievalOptions(top_k=4, score_threshold=0.0)), timeout=30)
            docs = answer.rag_context.documents
            assert docs[0].document_id == "md" and docs[0].embedding_model == small_model
            assert {d.embedding_model for d in docs} == {small_model, "all-MiniLM-L6-v2"}
    finally:
        handle.stop(1.0)
        engine.close()


def test_migrate_copies_every_models_collection(tmp_path: Path, embedder, small_model: str) -> None:  # type: ignore[no-untyped-def]
    from freki.engine.migration import migrate
    from freki.store.errors import StoreError

    source = settings_for(tmp_path / "edge", {"markdown": small_model})
    engine = FrekiEngine(source, embedder=embedder)
    try:
        add(engine, "md", MARKDOWN, "glaciers.md")
        add(engine, "txt", TEXT, "bread.txt")
        before = [(h.document_id, h.model) for h in engine.retrieve(
            Query(tenant_id="t1", text="glacier meltwater", top_k=4, score_threshold=0.0))]
    finally:
        engine.close()
    target = settings_for(tmp_path / "remote", {"markdown": small_model},
                          store={"backend": "remote", "url": str(tmp_path / "q")},
                          gdpr={"keys_path": str(tmp_path / "edge" / "keys.sqlite")})  # the same key store
    with pytest.raises(StoreError, match="same embedding_models"):
        migrate(source, settings_for(tmp_path / "remote", {}, store={"backend": "remote", "url": str(tmp_path / "q")}))
    assert len(migrate(source, target)) == 5  # chunks, registry, links, kept sources, the small model's chunks
    engine = FrekiEngine(target, embedder=embedder)
    try:
        after = [(h.document_id, h.model) for h in engine.retrieve(
            Query(tenant_id="t1", text="glacier meltwater", top_k=4, score_threshold=0.0))]
        assert after == before and before[0] == ("md", small_model)
    finally:
        engine.close()


@pytest.mark.parametrize("point, expect", [("update.chunks_written", "old"), ("update.committed", "new")])
def test_a_move_between_models_stopped_mid_commit_is_wholly_old_or_new_after_restart(
    tmp_path: Path, embedder, small_model: str, monkeypatch: pytest.MonkeyPatch, point: str, expect: str,  # type: ignore[no-untyped-def]
) -> None:
    """The process stops (here: an exception at the fault point, standing in for kill -9) while a document
    moves from the small model's collection to the standard one; the restart's consistency pass tidies both."""
    import freki.ingest.commit as commit

    settings = settings_for(tmp_path, {"markdown": small_model})
    engine = FrekiEngine(settings, embedder=embedder)
    try:
        add(engine, "doc", MARKDOWN, "doc.md")
        old = engine.get_document("t1", "doc")

        def stop(name: str) -> None:
            if name == point:
                raise SystemExit(f"stopped at {name}")

        monkeypatch.setattr(commit, "fault_point", stop)
        with pytest.raises(SystemExit):
            add(engine, "doc", TEXT, "doc.md", content_type="text")  # now routed to the standard model
        monkeypatch.undo()
    finally:
        engine.close()
    engine = FrekiEngine(settings, embedder=embedder)
    try:
        record = engine.get_document("t1", "doc")
        wanted = (small_model, old.generation) if expect == "old" else ("all-MiniLM-L6-v2", record.generation)
        assert (record.embedding_model, record.generation) == wanted
        held = [len(stored_ids(engine, i, "t1", "doc")) for i in (0, 1)]
        assert held == ([0, record.chunk_count] if expect == "old" else [record.chunk_count, 0])
        hits = engine.retrieve(Query(tenant_id="t1", text="glaciers" if expect == "old" else "sourdough",
                                     top_k=3, score_threshold=0.0))
        assert hits and {h.model for h in hits} == {record.embedding_model}
    finally:
        engine.close()


def test_a_route_added_later_moves_documents_on_full_reindex(tmp_path: Path, embedder, small_model: str) -> None:  # type: ignore[no-untyped-def]
    """FullReindex re-chunks from the kept source through the indexing path, so a document whose type got its
    own model since it was indexed moves to that model's collection (and the text document stays)."""
    engine = FrekiEngine(settings_for(tmp_path, {}), embedder=embedder)
    try:
        add(engine, "md", MARKDOWN, "glaciers.md")
        add(engine, "txt", TEXT, "bread.txt")
    finally:
        engine.close()
    engine = FrekiEngine(settings_for(tmp_path, {"markdown": small_model}), embedder=embedder)
    try:
        assert engine.get_document("t1", "md").embedding_model == "all-MiniLM-L6-v2"  # nothing moves by itself
        report = engine.full_reindex("t1")
        assert report.rechunked == 2
        moved = engine.get_document("t1", "md")
        assert (moved.embedding_model, moved.embedding_dimension, moved.document_type) == (
            small_model, SMALL_DIM, "markdown")
        assert len(stored_ids(engine, 1, "t1", "md")) == moved.chunk_count and not stored_ids(engine, 0, "t1", "md")
        assert engine.get_document("t1", "txt").embedding_model == "all-MiniLM-L6-v2"
        hits = engine.retrieve(Query(tenant_id="t1", text="alpine glaciers retreat", top_k=1, score_threshold=0.0))
        assert [(h.document_id, h.model) for h in hits] == [("md", small_model)]
    finally:
        engine.close()
