"""Several watch workers at once, with the real engine, model and folder: files overlap, documents never do.

``IndexSpy`` wraps the real ``engine.index`` (every call still indexes for real): it records which documents
are in work at once and can hold one document's indexing until the test lets it go, so a race is set up
on purpose rather than hoped for.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from freki.engine import FrekiEngine
from freki.gdpr.erasure import erase_document
from freki.ingest.indexing import IndexInput
from freki.watch.files import file_sha256
from tests.freki.watch.conftest import TENANT, paragraphs, settle, start_watched, wait_for

pytestmark = pytest.mark.integration


class IndexSpy:
    """Stands in for ``engine.index`` and calls the real one; see the module docstring."""

    def __init__(self, engine: FrekiEngine) -> None:
        self._real = engine.index
        self._lock = threading.Lock()
        self.in_work: list[str] = []
        self.most_at_once = 0
        self.same_document_twice: list[str] = []
        self.calls: defaultdict[str, int] = defaultdict(int)
        self._holds: dict[str, threading.Event] = {}
        self.entered: defaultdict[str, threading.Event] = defaultdict(threading.Event)
        engine.index = self  # type: ignore[method-assign]

    def hold(self, document_id: str) -> threading.Event:
        """The next indexing of ``document_id`` waits for the returned event."""
        self._holds[document_id] = threading.Event()
        return self._holds[document_id]

    def __call__(self, doc: IndexInput, *args, **kwargs):  # type: ignore[no-untyped-def]
        with self._lock:
            if doc.document_id in self.in_work:
                self.same_document_twice.append(doc.document_id)
            self.in_work.append(doc.document_id)
            self.most_at_once = max(self.most_at_once, len(self.in_work))
            self.calls[doc.document_id] += 1
            hold = self._holds.pop(doc.document_id, None)
        self.entered[doc.document_id].set()
        try:
            if hold is not None:
                assert hold.wait(120), f"the test never let {doc.document_id} go"
            return self._real(doc, *args, **kwargs)
        finally:
            with self._lock:
                self.in_work.remove(doc.document_id)


def _start(tmp_path: Path, embedder, workers: int = 2):  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    return start_watched(folder, tmp_path / "data", embedder, workers=workers)


def test_two_workers_index_a_folder_with_files_overlapping(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    watched, stop = _start(tmp_path, embedder)
    try:
        settle(watched.watcher)
        spy = IndexSpy(watched.engine)
        first = spy.hold("docs/f00.md")  # held until a second file is in work beside it
        for i in range(24):
            (watched.folder / f"f{i:02d}.md").write_text(paragraphs(f"many{i}", 2))
        wait_for(lambda: spy.entered["docs/f00.md"].is_set(), what="f00 in work")
        wait_for(lambda: spy.most_at_once >= 2, what="a second file indexed while f00 is in work")
        first.set()
        settle(watched.watcher)
        assert watched.doc_ids() == {f"docs/f{i:02d}.md" for i in range(24)}
        assert spy.same_document_twice == []
        assert watched.status().watch_folders[0].files_indexed == 24
        assert watched.status().queue_depth == 0
        hits = watched.search("animals near marker many17-1")
        assert hits and hits[0].document_id == "docs/f17.md"
    finally:
        stop()


def test_a_file_changed_while_it_is_indexed_waits_for_it_and_ends_current(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    watched, stop = _start(tmp_path, embedder)
    try:
        settle(watched.watcher)
        spy = IndexSpy(watched.engine)
        release = spy.hold("docs/a.md")
        path = watched.folder / "a.md"
        path.write_text(paragraphs("firstdraft", 3))
        wait_for(lambda: spy.entered["docs/a.md"].is_set(), what="first version in work")
        path.write_text(paragraphs("seconddraft", 3))  # changed while the first version is being indexed
        wait_for(lambda: watched.watcher._queue.qsize() >= 1 or spy.calls["docs/a.md"] > 1,
                 what="the change queued behind the file in work")
        # The other worker passes the waiting change by: another file is indexed meanwhile.
        (watched.folder / "b.md").write_text(paragraphs("bystander", 2))
        wait_for(lambda: "docs/b.md" in watched.doc_ids(), what="b.md indexed while a.md is held")
        assert spy.calls["docs/a.md"] == 1, "the change must not start while its document is in work"
        release.set()
        settle(watched.watcher)
        assert spy.same_document_twice == []
        assert spy.calls["docs/a.md"] == 2
        content = " ".join(str(p.payload["content"]) for p in watched.engine.chunks_of(TENANT, "docs/a.md"))
        assert "seconddraft" in content and "firstdraft" not in content
    finally:
        stop()


def test_a_rename_while_another_file_is_indexed_keeps_its_vectors(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    watched, stop = _start(tmp_path, embedder)
    try:
        (watched.folder / "old.md").write_text(paragraphs("renamed", 4))
        wait_for(lambda: "docs/old.md" in watched.doc_ids(), what="old.md indexed")
        settle(watched.watcher)
        spy = IndexSpy(watched.engine)
        release = spy.hold("docs/slow.md")
        (watched.folder / "slow.md").write_text(paragraphs("slowfile", 3))
        wait_for(lambda: spy.entered["docs/slow.md"].is_set(), what="slow.md in work")
        embedded = watched.engine.embedder.texts_embedded
        os.rename(watched.folder / "old.md", watched.folder / "new.md")
        wait_for(lambda: "docs/new.md" in watched.doc_ids() and "docs/old.md" not in watched.doc_ids(),
                 what="rename done while slow.md is held")
        assert watched.engine.embedder.texts_embedded == embedded, "a rename costs no embedding"
        assert watched.watcher.counts["moved"] == 1
        release.set()
        settle(watched.watcher)
        assert watched.doc_ids() == {"docs/new.md", "docs/slow.md"}
        assert spy.same_document_twice == []
    finally:
        stop()


def test_a_move_waits_for_its_source_documents_indexing(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    watched, stop = _start(tmp_path, embedder)
    try:
        settle(watched.watcher)
        spy = IndexSpy(watched.engine)
        release = spy.hold("docs/draft.md")
        (watched.folder / "draft.md").write_text(paragraphs("moving", 3))
        wait_for(lambda: spy.entered["docs/draft.md"].is_set(), what="draft.md in work")
        os.rename(watched.folder / "draft.md", watched.folder / "final.md")
        wait_for(lambda: watched.watcher._queue.qsize() >= 1 or "docs/final.md" in spy.entered,
                 what="the move queued behind the file in work")
        assert "docs/final.md" not in spy.entered, "the move must wait for its source's indexing"
        release.set()
        settle(watched.watcher)
        assert watched.doc_ids() == {"docs/final.md"}
        assert spy.same_document_twice == []
        assert watched.watcher.counts["moved"] == 1, "the vectors indexed under the old name moved"
    finally:
        stop()


def test_erasure_waits_for_files_in_work_and_what_it_erased_stays_out(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    watched, stop = _start(tmp_path, embedder)
    try:
        path = watched.folder / "personal.md"
        path.write_text(paragraphs("private", 3))
        wait_for(lambda: "docs/personal.md" in watched.doc_ids(), what="personal.md indexed")
        settle(watched.watcher)
        spy = IndexSpy(watched.engine)
        release = spy.hold("docs/personal.md")
        path.write_text(paragraphs("private", 3) + "\n\nA late addition about the private matter.")
        wait_for(lambda: spy.entered["docs/personal.md"].is_set(), what="the change in work")
        erased: list[int] = []
        eraser = threading.Thread(target=lambda: erased.append(
            erase_document(watched.engine, TENANT, "docs/personal.md", watcher=watched.watcher)))
        eraser.start()
        eraser.join(1.0)
        assert eraser.is_alive() and not erased, "erasure must wait for the file in work"
        (watched.folder / "later.md").write_text(paragraphs("later", 2))
        release.set()
        eraser.join(60)
        assert erased and erased[0] > 0
        settle(watched.watcher)
        assert "docs/personal.md" not in watched.doc_ids(), "the erased version stays out"
        assert "docs/later.md" in watched.doc_ids()
        assert watched.watcher.state.is_erased(TENANT, file_sha256(path.read_bytes()))
    finally:
        stop()
