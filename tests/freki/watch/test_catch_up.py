"""Startup catch-up: changes made while Freki was down are applied on start, unchanged files cost nothing."""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from tests.freki.watch.conftest import TENANT, paragraphs, settle, start_watched, wait_for, watch_settings

pytestmark = pytest.mark.integration


def test_restart_reconciles_added_changed_removed_and_renamed_files(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    folder, data = tmp_path / "docs", tmp_path / "data"
    folder.mkdir()
    for name, topic in (("keep.md", "moose"), ("edit.md", "beavers"), ("drop.md", "voles"), ("old.md", "hares")):
        (folder / name).write_text(paragraphs(topic, 3))
    watched, stop = start_watched(folder, data, embedder)
    try:
        settle(watched.watcher)
        assert watched.doc_ids() == {"docs/keep.md", "docs/edit.md", "docs/drop.md", "docs/old.md"}
        old = watched.engine.chunks_of(TENANT, "docs/old.md", with_vectors=True)
        hares = {p.payload["chunk_hash"]: p.dense for p in old}
    finally:
        stop()

    # Freki is down: nothing sees these changes as they happen.
    (folder / "edit.md").write_text(paragraphs("beavers", 3) + "\n\nLate note: the beaver dam was breached.")
    (folder / "drop.md").unlink()
    (folder / "new.md").write_text(paragraphs("shrews", 2))
    (folder / "sub").mkdir()
    os.rename(folder / "old.md", folder / "sub" / "renamed.md")

    watched, stop = start_watched(folder, data, embedder)
    try:
        settle(watched.watcher)
        assert watched.doc_ids() == {"docs/keep.md", "docs/edit.md", "docs/new.md", "docs/sub/renamed.md"}
        counts = watched.watcher.counts
        assert counts["unchanged"] == 1 and counts["updated"] == 2 and counts["created"] == 1, counts
        assert counts["moved"] == 1 and counts.get("deleted", 0) == 1, counts
        moved = watched.engine.chunks_of(TENANT, "docs/sub/renamed.md", with_vectors=True)
        assert {p.payload["chunk_hash"]: p.dense for p in moved} == hares, "renamed while down: vectors kept"
        edit = " ".join(str(p.payload["content"]) for p in watched.engine.chunks_of(TENANT, "docs/edit.md"))
        assert "beaver dam was breached" in edit
        total = sum(r.chunk_count for r in watched.engine.registry.iterate(TENANT))
        assert watched.engine.chunks.count([]) == total, "no orphaned or duplicated chunks"
    finally:
        stop()

    # A restart with nothing changed reads and hashes the files but embeds nothing.
    watched, stop = start_watched(folder, data, embedder)
    try:
        embedded = watched.engine.embedder.texts_embedded
        settle(watched.watcher)
        assert watched.watcher.counts["unchanged"] == 4 and embedder.texts_embedded == embedded
    finally:
        stop()


def test_erased_owner_stays_erased_while_its_file_is_unchanged(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    folder, data = tmp_path / "docs", tmp_path / "data"
    folder.mkdir()
    (folder / "cv.md").write_text(paragraphs("applicant", 2))
    watched, stop = start_watched(folder, data, embedder, folders=[{"path": str(folder), "name": "docs",
                                                                    "owner_id": "alice"}])
    try:
        settle(watched.watcher)
        response = watched.stub.DeleteOwnerData(
            freki_pb2.DeleteOwnerDataRequest(request_id="erase-1", owner_id="alice"), timeout=30)
        assert response.documents_deleted == 1 and response.chunks_deleted >= 1
        (folder / "cv.md").touch()  # an event for the unchanged file must not bring it back
        settle(watched.watcher)
        assert watched.doc_ids() == set()
    finally:
        stop()
    state = (data / "watch_state.json").read_text()
    assert "cv.md" not in state and "applicant" not in state, "the state keeps hashes only"

    watched, stop = start_watched(folder, data, embedder, folders=[{"path": str(folder), "name": "docs",
                                                                    "owner_id": "alice"}])
    try:
        settle(watched.watcher)
        assert watched.doc_ids() == set(), "a restart must not resurrect erased data"
        reasons = [s.reason for s in watched.status().watch_folders[0].skipped]
        assert reasons and "deleted on request" in reasons[0]
        os.rename(folder / "cv.md", folder / "cv-renamed.md")  # the same bytes under another name
        settle(watched.watcher)
        assert watched.doc_ids() == set(), "renaming erased content does not bring it back"
        os.rename(folder / "cv-renamed.md", folder / "cv.md")
        settle(watched.watcher)
        (folder / "cv.md").write_text(paragraphs("applicant", 2) + "\n\nUpdated CV, sent again by Alice.")
        wait_for(lambda: watched.doc_ids() == {"docs/cv.md"}, what="changed file indexed again")
    finally:
        stop()


def test_erasure_while_watching_is_off_is_still_honoured_when_it_is_back_on(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    folder, data = tmp_path / "docs", tmp_path / "data"
    folder.mkdir()
    (folder / "bob.md").write_text(paragraphs("bobdata", 2))
    owned = [{"path": str(folder), "name": "docs", "owner_id": "bob"}]
    watched, stop = start_watched(folder, data, embedder, folders=owned)
    try:
        settle(watched.watcher)
        assert watched.doc_ids() == {"docs/bob.md"}
    finally:
        stop()
    # Same data dir, watching switched off: the erasure must still reach the watcher's state.
    settings = watch_settings(data, folder, folders=[])
    engine = FrekiEngine(settings, embedder=embedder)
    handle, engine = build_server(settings, engine=engine)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            response = freki_pb2_grpc.FrekiServiceStub(channel).DeleteOwnerData(
                freki_pb2.DeleteOwnerDataRequest(request_id="erase-bob", owner_id="bob"), timeout=30)
        assert response.documents_deleted == 1
    finally:
        handle.stop(1.0)
        engine.close()
    watched, stop = start_watched(folder, data, embedder, folders=owned)
    try:
        settle(watched.watcher)
        assert watched.doc_ids() == set()
        assert "deleted on request" in watched.status().watch_folders[0].skipped[0].reason
    finally:
        stop()
