"""FullReindex re-chunks from kept sources; a model change migrates blue/green (real engine, real models)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from freki.store import FieldMatch
from tests.freki.engine.small_models_support import build_second_model

pytestmark = pytest.mark.integration
T = "tenant-r"


def settings(data_dir: Path, **overrides: object) -> FrekiSettings:
    values: dict[str, object] = {
        "data_dir": data_dir, "embedding_backend": "torch",
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        "reindex": {"switch_grace_s": 0.0},
    }
    values.update(overrides)
    return FrekiSettings(**values)  # type: ignore[arg-type]


def text(topic: str, n: int) -> str:
    return "\n\n".join(f"Paragraph {i} about {topic}: the {topic} keeper counted {i * 7 + 3} lanterns along the "
                       f"{['north', 'east', 'south'][i % 3]} quay and wrote the tally into the {topic} ledger."
                       for i in range(n))


def doc(document_id: str, body: str, owner: str = "") -> IndexInput:
    return IndexInput(tenant_id=T, document_id=document_id, data=body, source=f"{document_id}.md",
                      owner_id=owner, metadata={"kind": "note"})


def source_pieces(engine: FrekiEngine, document_id: str = "") -> int:
    assert engine.active.sources is not None
    flt = [FieldMatch("tenant_id", (T,))] + ([FieldMatch("document_id", (document_id,))] if document_id else [])
    return engine.active.sources.store.count(flt)


@pytest.fixture(scope="module")
def second_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_second_model(tmp_path_factory.mktemp("minilm3"))


def test_full_reindex_rechunks_from_the_kept_source_with_the_current_settings(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(tmp_path), embedder=embedder)
    try:
        engine.index(doc("kept", text("harbour", 12)))
        before = engine.get_document(T, "kept").chunk_count
        assert source_pieces(engine, "kept") == 1
    finally:
        engine.close()
    smaller = settings(tmp_path, chunking={"max_tokens": 80, "min_tokens": 16, "overlap_tokens": 0})
    engine = FrekiEngine(smaller, embedder=embedder)
    try:
        report = engine.full_reindex(T)
        record = engine.get_document(T, "kept")
        assert (report.documents, report.rechunked, report.reembedded_only, report.note) == (1, 1, 0, "")
        assert record.chunk_count > before, "re-chunked with the smaller max_tokens"
        assert record.metadata["kind"] == "note" and record.source == "kept.md"
        assert all(p.payload["token_count"] <= 80 for p in engine.chunks_of(T, "kept"))
        assert source_pieces(engine, "kept") == 1, "the old version's source went with it"
    finally:
        engine.close()


def test_without_a_kept_source_full_reindex_re_embeds_and_says_so(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(tmp_path, reindex={"keep_sources": False}), embedder=embedder)
    try:
        engine.index(doc("plain", text("quarry", 6)))
        chunks = engine.get_document(T, "plain").chunk_count
    finally:
        engine.close()
    engine = FrekiEngine(settings(tmp_path), embedder=embedder)
    try:
        engine.index(doc("large", text("orchard", 40)))
        report = engine.full_reindex(T, "plain")
        assert (report.rechunked, report.reembedded_only, report.chunks) == (0, 1, chunks)
        assert "no kept source" in report.note
    finally:
        engine.close()


def test_delete_and_erasure_remove_the_kept_source(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(tmp_path), embedder=embedder)
    try:
        engine.index(doc("gone", text("delta", 4)))
        engine.index(doc("erased", text("fjord", 4), owner="olga"))
        engine.index(doc("other", text("marsh", 4), owner="otto"))
        engine.delete_document(T, "gone")
        record = engine.get_document(T, "erased")
        engine.delete_owner(T, "olga", [record])
        assert source_pieces(engine, "gone") == source_pieces(engine, "erased") == 0
        assert source_pieces(engine) == 1
        assert engine.keys.get(record.generation) is None, "its key (sealing the source too) is destroyed"
    finally:
        engine.close()


def wait_for(engine: FrekiEngine, state: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = engine.blue_green.status()
        if status is not None and status.state in (state, "failed"):
            assert status.state == state, status.error
            return
        time.sleep(0.05)
    raise AssertionError(f"migration did not reach {state}: {engine.blue_green.status()}")


@pytest.fixture
def built(tmp_path: Path, embedder) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(tmp_path), embedder=embedder)
    try:
        for i in range(10):
            engine.index(doc(f"d{i}", text(["heron", "badger", "otter", "lynx", "stoat"][i % 5] + str(i), 5),
                             owner="olga" if i == 9 else ""))
    finally:
        engine.close()
    yield tmp_path


def test_a_model_change_serves_the_old_index_then_migrates_blue_green(built: Path, embedder, second_model: str) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(built, embedding_model=second_model), embedder=embedder)
    try:
        status = engine.status(T)
        assert (status.embedding_model, status.configured_model) == ("all-MiniLM-L6-v2", second_model)
        assert status.document_count == 10 and status.migration is None
        hits_before = engine.retrieve(Query(tenant_id=T, text="badger ledger lanterns", top_k=3, score_threshold=0.0))
        assert hits_before and hits_before[0].payload["document_id"] in {"d1", "d6"}
        engine.blue_green.start()
        # writes during the migration: they go to the old index and reach the new one before the switch
        engine.index(doc("late", text("walrus", 5)))
        engine.index(doc("d0", text("heron-rewritten", 3)))
        engine.delete_document(T, "d2")
        engine.delete_owner(T, "olga", [engine.get_document(T, "d9")])
        assert engine.retrieve(Query(tenant_id=T, text="walrus ledger", top_k=3, score_threshold=0.0)), "served"
        wait_for(engine, "done")
        status = engine.status(T)
        assert (status.embedding_model, status.collection) == (second_model, "freki_chunks__v1")
        assert status.migration is not None and status.migration.model_from == "all-MiniLM-L6-v2"
        listed = {r.document_id: r for r in engine.registry.iterate(T)}
        assert set(listed) == {"d0", "d1", "d3", "d4", "d5", "d6", "d7", "d8", "late"}
        assert all(r.embedding_model == second_model for r in listed.values())
        assert "heron-rewritten" in engine.chunks_of(T, "d0")[0].payload["content"], "the later write won"
        hits = engine.retrieve(Query(tenant_id=T, text="walrus ledger lanterns", top_k=3, score_threshold=0.0))
        assert hits[0].payload["document_id"] == "late"
        assert status.chunk_count == sum(r.chunk_count for r in listed.values())
        time.sleep(0.5)  # the old index is dropped after the grace
        assert not (built / "qdrant" / "freki_chunks").exists()
    finally:
        engine.close()
    engine = FrekiEngine(settings(built, embedding_model=second_model), embedder=embedder)
    try:
        assert engine.status(T).collection == "freki_chunks__v1" and engine.status(T).document_count == 9
        assert engine.blue_green.status() is None
    finally:
        engine.close()


def test_a_migration_is_only_started_on_request_and_refused_without_a_model_change(built: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(built), embedder=embedder)
    try:
        from wolf_service.errors import FailedPrecondition

        with pytest.raises(FailedPrecondition, match="already built with 'all-MiniLM-L6-v2'"):
            engine.blue_green.start()
    finally:
        engine.close()


def test_freki_migrate_copies_the_index_a_model_migration_switched_to(built: Path, embedder, second_model: str,  # type: ignore[no-untyped-def]
                                                                      tmp_path_factory: pytest.TempPathFactory) -> None:
    from freki.engine.active_index import ActiveIndex, MigrationRecord, active_index_path, load_active, save_active
    from freki.engine.migration import migrate
    from freki.store.errors import StoreError

    source = settings(built, embedding_model=second_model)
    # Each names one document's own term: with the second model's cosines mapped onto MiniLM's scale (its
    # unrelated-text background is far higher) the rest of the top 4 may tie at one score, in any order.
    questions = ("the badger1 keeper and his lanterns", "otter2 quay tally", "stoat4 keeper")

    def answers(engine: FrekiEngine) -> list[list[tuple[str, float]]]:
        return [[(h.payload["document_id"], round(h.score, 4)) for h in engine.retrieve(
            Query(tenant_id=T, text=q, top_k=4, score_threshold=0.0, mode="hybrid"))] for q in questions]

    engine = FrekiEngine(source, embedder=embedder)
    try:
        engine.blue_green.start()
        wait_for(engine, "done")
        time.sleep(0.3)  # the old index is dropped after the grace
        before, pieces = answers(engine), source_pieces(engine)
    finally:
        engine.close()
    assert load_active(active_index_path(built)).version == 1 and pieces == 10
    elsewhere = tmp_path_factory.mktemp("migrated")
    target = settings(elsewhere, embedding_model=second_model, store={"backend": "remote", "url": str(elsewhere / "q")},
                      gdpr={"keys_path": str(built / "keys.sqlite")})  # the same key store
    copied = [r.collection for r in migrate(source, target)]
    assert copied == ["freki_chunks__v1", "freki_chunks__v1_documents", "freki_chunks__v1_links",
                      "freki_chunks__v1_sources"], copied
    assert load_active(active_index_path(elsewhere)) == ActiveIndex(1)
    moved = FrekiEngine(target, embedder=embedder)
    try:
        assert moved.status(T).collection == "freki_chunks__v1" and moved.status(T).document_count == 10
        after = answers(moved)
        assert [a[0] for a in after] == [b[0] for b in before] and before[0][0][0] == "d1"
        assert [[score for _, score in a] for a in after] == [[score for _, score in b] for b in before]
        assert source_pieces(moved) == 10, "kept sources moved too: FullReindex still re-chunks"
    finally:
        moved.close()
    # mid-migration the serving index is about to change: refused, naming what to do
    save_active(active_index_path(built), ActiveIndex(1, MigrationRecord(2, second_model, "other", "2026-01-01")))
    with pytest.raises(StoreError, match="model migration to 'other'.*let it finish"):
        migrate(source, settings(tmp_path_factory.mktemp("refused"), embedding_model=second_model,
                                 store={"backend": "remote", "url": str(elsewhere / "q2")}))
@pytest.mark.parametrize("meanwhile", ["delete", "erase"])
def test_a_document_deleted_or_erased_while_its_chunks_are_re_embedded_stays_gone(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch, meanwhile: str,  # type: ignore[no-untyped-def]
) -> None:
    import threading

    from freki.engine import reindex

    engine = FrekiEngine(settings(tmp_path, reindex={"keep_sources": False}), embedder=embedder)
    try:
        engine.index(doc("victim", text("heron", 3), owner="olga"))
        record = engine.get_document(T, "victim")
        remove = (lambda: engine.delete_document(T, "victim")) if meanwhile == "delete" else (
            lambda: engine.delete_owner(T, "olga", [record]))
        racer = threading.Thread(target=remove)
        real = reindex.embed_in_slices

        def embed_while_removed(embed, texts):  # type: ignore[no-untyped-def]
            racer.start()  # the delete / erasure arrives while the stored texts are being embedded
            racer.join(0.5)
            return real(embed, texts)

        monkeypatch.setattr(reindex, "embed_in_slices", embed_while_removed)
        engine.full_reindex(T)
        racer.join(30)
        assert not racer.is_alive()
        assert engine.chunks_of(T, "victim") == []
        assert all(store.count([FieldMatch("document_id", ("victim",))]) == 0 for store in engine.chunk_stores)
    finally:
        engine.close()


def test_a_migration_without_kept_sources_keeps_the_knowledge_graph(tmp_path, embedder, second_model) -> None:  # type: ignore[no-untyped-def]
    no_sources = {"keep_sources": False, "switch_grace_s": 0.0}
    engine = FrekiEngine(settings(tmp_path, reindex=no_sources), embedder=embedder)
    try:
        engine.index(doc("notes/a", "# Alpha\n\nAlpha needs [[Beta]], see [the spec](spec/b.md) and [[gamma/Delta]]."))
        engine.index(doc("notes/spec/b", "# Beta\n\nBeta is the spec of alpha."))
        before = engine.graph.document_links(T, "notes/a", 10)[0]
        assert {(x.target, x.target_document_id) for x in before} == {
            ("Beta", "notes/spec/b"), ("spec/b.md", "notes/spec/b"), ("gamma/Delta", "")}
    finally:
        engine.close()
    engine = FrekiEngine(settings(tmp_path, reindex=no_sources, embedding_model=second_model), embedder=embedder)
    try:
        engine.blue_green.start()
        wait_for(engine, "done")
        assert engine.status(T).embedding_model == second_model
        after = engine.graph.document_links(T, "notes/a", 10)[0]
        assert sorted(after, key=str) == sorted(before, key=str)
        assert [x.source_document_id for x in engine.graph.document_links(T, "notes/spec/b", 10)[1]] == [
            "notes/a", "notes/a"]
    finally:
        engine.close()
