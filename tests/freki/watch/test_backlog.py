"""A backlog goes through a bounded queue while queries keep being answered; polling mode works too."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.freki.watch.conftest import paragraphs, settle, start_watched, wait_for

pytestmark = pytest.mark.integration


def test_backlog_is_bounded_and_queries_are_answered_meanwhile(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "first.md").write_text("Reindeer migrate across the tundra every spring.")
    files = 14
    for i in range(files):
        (folder / f"n{i:02d}.md").write_text(paragraphs(f"backlog{i}", 3))
    watched, stop = start_watched(folder, tmp_path / "data", embedder, queue_size=2)
    try:
        wait_for(lambda: "docs/first.md" in watched.doc_ids(), what="first file indexed")
        queue_sizes: list[int] = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                queue_sizes.append(watched.watcher._queue.qsize())
                done.wait(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        answered_while_busy = 0
        try:
            while True:
                status = watched.status()
                if status.queue_depth == 0 and status.watch_folders[0].files_pending == 0:
                    break
                hits = watched.search("reindeer migrate across the tundra")
                if hits and hits[0].document_id == "docs/first.md" and watched.status().queue_depth > 0:
                    answered_while_busy += 1
        finally:
            done.set()
            sampler.join()
        assert answered_while_busy >= 3, "queries are answered while the backlog is indexed"
        assert max(queue_sizes) <= 2, "the catch-up never holds more than queue_size files in the queue"
        assert len(watched.doc_ids()) == files + 1
    finally:
        stop()


def test_polling_observer_picks_up_creates_renames_and_deletes(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "share"
    folder.mkdir()
    watched, stop = start_watched(folder, tmp_path / "data", embedder, polling=True, poll_interval_s=0.2)
    try:
        settle(watched.watcher)
        (folder / "a.txt").write_text(paragraphs("polled", 2))
        wait_for(lambda: watched.doc_ids() == {"docs/a.txt"}, what="created file seen by polling")
        embedded = watched.engine.embedder.texts_embedded
        os.rename(folder / "a.txt", folder / "b.txt")
        wait_for(lambda: watched.doc_ids() == {"docs/b.txt"}, what="rename seen by polling")
        assert watched.engine.embedder.texts_embedded == embedded
        (folder / "b.txt").unlink()
        wait_for(lambda: watched.doc_ids() == set(), what="delete seen by polling")
    finally:
        stop()


def test_falls_back_to_polling_when_file_events_are_unavailable(
    tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    from watchdog.observers import Observer

    class NoInotify(Observer):  # type: ignore[misc,valid-type]
        def start(self) -> None:
            raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr("freki.watch.watcher.Observer", NoInotify)
    folder = tmp_path / "docs"
    folder.mkdir()
    watched, stop = start_watched(folder, tmp_path / "data", embedder, poll_interval_s=0.2)
    try:
        (folder / "late.txt").write_text(paragraphs("fallback", 2))
        wait_for(lambda: watched.doc_ids() == {"docs/late.txt"}, what="file seen by the polling fallback")
    finally:
        stop()
