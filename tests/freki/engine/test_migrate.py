"""``freki migrate`` on the real model and engines: an index built on the embedded engine answers the same
from qdrant-client's engine (on-disk local mode) after the copy, and back; a killed copy is finished by
``--resume``; a non-empty target and a model mismatch are refused."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from freki.cli import main
from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.store import EdgeStore, RemoteStore
from freki.store.migrate import copy_collection, recorded_spec
from tests.freki.api.corpus_support import ASTRO_DOC, BAKERY_DOC, GERI_DOC
from tests.freki.conftest import freki_settings
from tests.freki.store.points_support import make_points, spec

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
QUESTIONS = ("Which TCP port does Geri listen on?", "how often to feed a sourdough starter", "largest moon")


def _answers(engine: FrekiEngine) -> list[list[tuple[str, str, float]]]:
    return [[(h.document_id, h.content, round(h.score, 4)) for h in engine.retrieve(
        Query("default", q, top_k=5, score_threshold=0.0, mode="hybrid"))] for q in QUESTIONS]


def _config(path: Path, data_dir: Path, **store: object) -> Path:
    import json

    settings = {"data_dir": str(data_dir), "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20}}
    if store:
        settings["store"] = store
    path.write_text(json.dumps(settings))
    return path


def test_an_index_moves_to_a_server_and_back_without_re_embedding(tmp_path: Path, embedder, capsys) -> None:  # type: ignore[no-untyped-def]
    edge_dir, server_dir = tmp_path / "edge", tmp_path / "server"
    engine = FrekiEngine(freki_settings(edge_dir), embedder=embedder)
    for doc_id, text in (("geri.md", GERI_DOC), ("bread.md", BAKERY_DOC), ("jupiter.txt", ASTRO_DOC)):
        engine.index(IndexInput(tenant_id="default", document_id=doc_id, data=text, source=doc_id,
                                metadata={"topics": ["a", "b"]}))
    before, record = _answers(engine), engine.get_document("default", "bread.md")
    engine.close()

    source_cfg = _config(tmp_path / "edge.json", edge_dir)
    assert main(["migrate", "--config", str(source_cfg), "--to-url", str(server_dir)]) == 0
    out = capsys.readouterr().out
    assert "freki_chunks:" in out and "freki_chunks_documents: 3 points" in out

    moved = FrekiEngine(freki_settings(edge_dir, store={"backend": "remote", "url": str(server_dir)}),
                        embedder=embedder)
    try:
        assert _answers(moved) == before  # same chunks, same vectors, same scores
        again = moved.get_document("default", "bread.md")
        assert (again.content_hash, again.metadata, again.generation) == (
            record.content_hash, record.metadata, record.generation)
    finally:
        moved.close()

    # and back into a fresh embedded data dir
    server_cfg = _config(tmp_path / "server.json", edge_dir, backend="remote", url=str(server_dir))
    assert main(["migrate", "--config", str(server_cfg), "--to-data-dir", str(tmp_path / "edge2")]) == 0
    back = FrekiEngine(freki_settings(tmp_path / "edge2", gdpr={"keys_path": str(edge_dir / "keys.sqlite")}),
                       embedder=embedder)
    try:
        assert _answers(back) == before
    finally:
        back.close()


def test_a_non_empty_target_needs_resume_and_the_model_must_match(tmp_path: Path) -> None:
    points = make_points(30)
    with EdgeStore(tmp_path / "edge", flush_writes=False) as source:
        source.ensure_collection(spec())
        source.upsert(points)
        target = RemoteStore(path=str(tmp_path / "server"))
        try:
            found = recorded_spec(source, "chunks")
            assert found == spec()
            copy_collection(source, target, spec(), batch=7)
            with pytest.raises(Exception, match="already holds 30 points; pass resume"):
                copy_collection(source, target, spec())
            assert copy_collection(source, target, spec(), resume=True).points == 30
            assert all(p.sparse is None for p in target.scroll([], 100, with_vectors=True)[0])  # dense unless asked
            copied = {p.id: p for p in target.scroll([], 100, with_vectors=True, with_sparse=True)[0]}
            for p in points:
                got = copied[p.id]
                assert got.payload == p.payload and got.sparse is not None and p.sparse is not None
                assert got.sparse.indices == p.sparse.indices
                assert got.sparse.values == pytest.approx(p.sparse.values, rel=1e-6)  # stored as float32
        finally:
            target.close()
        other = RemoteStore(path=str(tmp_path / "other"))
        try:
            other.ensure_collection(spec(model="another-model"))
            with pytest.raises(Exception, match="another-model"):
                copy_collection(source, other, spec(), resume=True)
        finally:
            other.close()


def test_a_killed_copy_is_finished_by_resume(tmp_path: Path) -> None:
    with EdgeStore(tmp_path / "edge", flush_writes=False) as source:
        source.ensure_collection(spec())
        source.upsert(make_points(500))
    script = textwrap.dedent(f"""
        import os
        from freki.store import EdgeStore, RemoteStore
        from freki.store.migrate import copy_collection
        from tests.freki.store.points_support import spec
        source, target = EdgeStore({str(tmp_path / "edge")!r}), RemoteStore(path={str(tmp_path / "server")!r})
        def die(copied):
            if copied >= 200:
                os._exit(9)  # as a SIGKILL would: nothing closed or flushed
        copy_collection(source, target, spec(), batch=50, progress=die)
    """)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    assert subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, timeout=120).returncode == 9
    with EdgeStore(tmp_path / "edge", flush_writes=False) as source:
        target = RemoteStore(path=str(tmp_path / "server"))
        try:
            with pytest.raises(Exception, match="pass resume"):
                copy_collection(source, target, spec())
            assert copy_collection(source, target, spec(), resume=True).points == 500
            assert target.count([]) == 500
        finally:
            target.close()


def test_the_wrong_key_store_stops_the_start_and_loses_nothing(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """An index moved (or a gdpr.keys_path changed) without its key store must not be taken for the leftovers
    of a crashed erasure: the consistency pass would drop every document."""
    from freki.store.errors import KeyStoreMismatch

    engine = FrekiEngine(freki_settings(tmp_path / "a"), embedder=embedder)
    engine.index(IndexInput(tenant_id="default", document_id="bread.md", data=BAKERY_DOC, source="bread.md"))
    engine.close()
    with pytest.raises(KeyStoreMismatch, match=r"1 document records are sealed with keys key store .*other\.sqlite"):
        FrekiEngine(freki_settings(tmp_path / "a", gdpr={"keys_path": str(tmp_path / "other.sqlite")}),
                    embedder=embedder)
    again = FrekiEngine(freki_settings(tmp_path / "a"), embedder=embedder)
    try:
        assert again.get_document("default", "bread.md").chunk_count >= 1
        assert again.retrieve(Query("default", "sourdough starter", top_k=1, score_threshold=0.0, mode="hybrid"))
    finally:
        again.close()
    # the operator's way out, once the key store is known to be right: drop what no key opens
    dropped = FrekiEngine(freki_settings(tmp_path / "a", gdpr={"keys_path": str(tmp_path / "other.sqlite"),
                                                                "drop_records_without_keys": True}), embedder=embedder)
    try:
        assert dropped.repair_report.removed_documents == [("default", "bread.md")]
    finally:
        dropped.close()


def test_a_record_whose_key_was_destroyed_is_still_cleaned_up(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """The other side of the rule above: a key this store destroyed (a crash inside an erasure, between the
    key and the record) makes its record unreadable on purpose, and the pass removes it."""
    engine = FrekiEngine(freki_settings(tmp_path), embedder=embedder)
    engine.index(IndexInput(tenant_id="default", document_id="bread.md", data=BAKERY_DOC, source="bread.md"))
    engine.index(IndexInput(tenant_id="default", document_id="geri.md", data=GERI_DOC, source="geri.md"))
    engine.keys.destroy([engine.get_document("default", "bread.md").generation])
    engine.close()
    again = FrekiEngine(freki_settings(tmp_path), embedder=embedder)
    try:
        assert again.repair_report.counts["unreadable_records"] == 1
        assert again.repair_report.removed_documents == [("default", "bread.md")]
        assert again.get_document("default", "geri.md").chunk_count >= 1
    finally:
        again.close()
    third = FrekiEngine(freki_settings(tmp_path), embedder=embedder)  # the tombstones were forgotten after use
    try:
        assert not third.repair_report.counts
    finally:
        third.close()
