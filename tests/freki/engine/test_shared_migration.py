"""Model migrations with replicas on one shared collection (``store.shared``; docs/reindex.md).

A migration on one replica cannot see the other replicas' writes and drops the old index after its switch, so
on a shared store it is refused unless this replica is declared the single writer (``reindex.shared_migration``)
and the active-index record is a file every replica reads (``reindex.active_index_path``). Replicas then start
on the version that record names, and a replica that is not the migrator never resumes or abandons another's
migration. One real engine behind the replicas (``tests.freki.shared_engine_support``), the real model and a real second
model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from freki.engine import FrekiEngine
from freki.engine.active_index import ActiveIndex, MigrationRecord, load_active, save_active
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from tests.freki.engine.test_reindex import T, doc, settings, text, wait_for
from tests.freki.shared_engine_support import SharedEngine, shared_store_settings
from wolf_service.errors import FailedPrecondition

pytestmark = pytest.mark.integration


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> SharedEngine:
    return SharedEngine().install(monkeypatch)


def replica(tmp: Path, name: str, **reindex: Any) -> dict[str, Any]:
    """Overrides of one replica: its own data dir, the shared collection and key store, reindex settings."""
    return {"data_dir": tmp / name, **shared_store_settings(tmp), "reindex": {"switch_grace_s": 0.0, **reindex}}


def test_a_model_migration_on_a_shared_store_needs_a_declared_single_writer(  # type: ignore[no-untyped-def]
        tmp_path: Path, shared: SharedEngine, embedder) -> None:
    for reindex, named in (({}, "reindex.shared_migration"),
                           ({"shared_migration": True}, "reindex.active_index_path")):
        engine = FrekiEngine(FrekiSettings(**replica(tmp_path, "a", **reindex)), embedder=embedder)
        try:
            with pytest.raises(FailedPrecondition, match=named.replace(".", r"\.")):
                engine.blue_green.start()
            assert engine.blue_green.status() is None
        finally:
            engine.close()


def test_replicas_start_on_the_index_a_shared_migration_switched_to(  # type: ignore[no-untyped-def]
        tmp_path: Path, shared: SharedEngine, embedder, second_model: str) -> None:
    record = tmp_path / "shared" / "active_index.json"
    first = FrekiEngine(settings(**replica(tmp_path, "a")), embedder=embedder)
    try:
        for i, topic in enumerate(("heron", "badger", "otter")):
            first.index(doc(f"d{i}", text(topic, 4)))
    finally:
        first.close()
    # The other replicas are stopped; this one is the declared single writer.
    migrator = FrekiEngine(settings(**replica(tmp_path, "a", shared_migration=True, active_index_path=record),
                                    embedding_model=second_model), embedder=embedder)
    try:
        migrator.blue_green.start()
        wait_for(migrator, "done")
    finally:
        migrator.close()
    assert load_active(record) == ActiveIndex(1)
    # Another replica (its own data dir, not a migrator) starts on the new version from the shared record.
    other = FrekiEngine(settings(**replica(tmp_path, "b", active_index_path=record), embedding_model=second_model),
                        embedder=embedder)
    try:
        status = other.status(T)
        assert (status.collection, status.embedding_model, status.document_count) == (
            "freki_chunks__v1", second_model, 3)
        hits = other.retrieve(Query(tenant_id=T, text="badger ledger lanterns", top_k=1, score_threshold=0.0))
        assert hits[0].payload["document_id"] == "d1"
    finally:
        other.close()


def test_a_replica_leaves_another_replicas_migration_alone(  # type: ignore[no-untyped-def]
        tmp_path: Path, shared: SharedEngine, embedder) -> None:
    record = tmp_path / "shared" / "active_index.json"
    pending = ActiveIndex(0, MigrationRecord(1, "all-MiniLM-L6-v2", "some-other-model", "2026-11-25T00:00:00+00:00"))
    save_active(record, pending)
    # Its embedding_model differs from the recorded target: a migrator would abandon (drop) the target index.
    engine = FrekiEngine(FrekiSettings(**replica(tmp_path, "b", active_index_path=record)), embedder=embedder)
    try:
        assert engine.blue_green.status() is None
        assert engine.status(T).collection == "freki_chunks"
    finally:
        engine.close()
    assert load_active(record) == pending, "the record is the migrator's: neither resumed nor rewritten"


@pytest.fixture(scope="module")
def second_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.freki.engine.small_models_support import build_second_model

    return build_second_model(tmp_path_factory.mktemp("minilm3-shared"))
