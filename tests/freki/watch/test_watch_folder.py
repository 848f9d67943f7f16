"""Watch folder, end to end: real folder, real watchdog, real engine and model, queried over gRPC."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from wolf.v1 import freki_pb2

from tests.freki.watch.conftest import TENANT, Watched, paragraphs, settle, wait_for

pytestmark = pytest.mark.integration


def test_created_file_is_indexed_and_searchable(watched: Watched) -> None:
    (watched.folder / "wolves.md").write_text("# Wolves\n\n" + paragraphs("wolves", 4))
    wait_for(lambda: "docs/wolves.md" in watched.doc_ids(), what="wolves.md indexed")
    settle(watched.watcher)
    hits = watched.search("animals near marker wolves-2")
    assert hits and hits[0].document_id == "docs/wolves.md"
    assert "wolves-2" in " ".join(h.content for h in hits)
    folder_status = watched.status().watch_folders[0]
    assert folder_status.path == str(watched.folder) and folder_status.files_indexed == 1
    other = watched.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(tenant_id="other"), timeout=30)
    assert list(other.watch_folders) == [], "another tenant does not see this tenant's folders"


def test_modified_file_is_reindexed_incrementally(watched: Watched) -> None:
    path = watched.folder / "notes.txt"
    path.write_text(paragraphs("lynx", 6))
    wait_for(lambda: "docs/notes.txt" in watched.doc_ids(), what="notes indexed")
    settle(watched.watcher)
    before = {p.payload["chunk_hash"]: p.dense for p in watched.engine.chunks_of(TENANT, "docs/notes.txt",
                                                                                 with_vectors=True)}
    path.write_text(paragraphs("lynx", 6).replace("record number 5", "RECORD NUMBER FIVE (corrected)"))
    settle(watched.watcher)
    after = watched.engine.chunks_of(TENANT, "docs/notes.txt", with_vectors=True)
    assert any("RECORD NUMBER FIVE" in str(p.payload["content"]) for p in after)
    assert not any("record number 5 " in str(p.payload["content"]) for p in after)
    kept = [p for p in after if before.get(p.payload["chunk_hash"]) == p.dense]  # same text, same vector
    assert len(kept) >= len(after) - 2, "only chunks around the edit may change"
    assert watched.watcher.counts["updated"] == 1


def test_deleted_file_disappears_from_list_and_search(watched: Watched) -> None:
    path = watched.folder / "gone.md"
    path.write_text(paragraphs("otters", 3))
    wait_for(lambda: "docs/gone.md" in watched.doc_ids(), what="indexed")
    path.unlink()
    wait_for(lambda: "docs/gone.md" not in watched.doc_ids(), what="deleted")
    assert watched.engine.chunks.count([]) == 0
    assert all(h.document_id != "docs/gone.md" for h in watched.search("otters near marker"))
    assert watched.status().watch_folders[0].files_indexed == 0


def test_rename_and_folder_move_keep_vectors_without_embedding(watched: Watched) -> None:
    (watched.folder / "a.md").write_text(paragraphs("badgers", 5))
    wait_for(lambda: "docs/a.md" in watched.doc_ids(), what="a.md indexed")
    settle(watched.watcher)
    original = watched.engine.chunks_of(TENANT, "docs/a.md", with_vectors=True)
    vectors = {p.payload["chunk_hash"]: p.dense for p in original}
    embedded = watched.engine.embedder.texts_embedded

    os.rename(watched.folder / "a.md", watched.folder / "b.md")
    wait_for(lambda: watched.doc_ids() == {"docs/b.md"}, what="rename to b.md")
    (watched.folder / "archive").mkdir()
    os.rename(watched.folder / "b.md", watched.folder / "archive" / "b.md")
    wait_for(lambda: watched.doc_ids() == {"docs/archive/b.md"}, what="move into archive/")
    os.rename(watched.folder / "archive", watched.folder / "old")  # a folder rename moves every file in it
    wait_for(lambda: watched.doc_ids() == {"docs/old/b.md"}, what="folder rename")
    settle(watched.watcher)

    assert watched.engine.embedder.texts_embedded == embedded, "a rename must not embed anything"
    moved = watched.engine.chunks_of(TENANT, "docs/old/b.md", with_vectors=True)
    assert {p.payload["chunk_hash"]: p.dense for p in moved} == vectors
    assert {p.payload["source"] for p in moved} == {str(watched.folder / "old" / "b.md")}
    assert watched.engine.chunks.count([]) == len(vectors), "no copies left behind under old ids"
    assert watched.watcher.counts["moved"] == 3
    hits = watched.search("animals near marker badgers-3")
    assert hits[0].document_id == "docs/old/b.md"


def test_moves_into_freshly_created_folders_keep_vectors(watched: Watched) -> None:
    # inotify may report these as delete + create (the new folder's watch is added after the move);
    # the watcher pairs the halves by content instead of re-embedding.
    (watched.folder / "m.md").write_text(paragraphs("martens", 3))
    wait_for(lambda: "docs/m.md" in watched.doc_ids(), what="m.md indexed")
    settle(watched.watcher)
    embedded = watched.engine.embedder.texts_embedded
    current = watched.folder / "m.md"
    for depth in range(3):
        target_dir = watched.folder / f"year{depth}" / "q1"
        target_dir.mkdir(parents=True)
        os.rename(current, target_dir / "m.md")
        current = target_dir / "m.md"
        expected = f"docs/year{depth}/q1/m.md"
        wait_for(lambda e=expected: watched.doc_ids() == {e}, what=f"move to {expected}")  # type: ignore[misc]
    settle(watched.watcher)
    assert watched.engine.embedder.texts_embedded == embedded, watched.watcher.counts


def test_editor_style_saves_index_once_when_complete(watched: Watched) -> None:
    target = watched.folder / "plan.md"
    target.write_text(paragraphs("herons", 3))
    wait_for(lambda: "docs/plan.md" in watched.doc_ids(), what="plan.md indexed")
    settle(watched.watcher)
    counts = dict(watched.watcher.counts)
    # vim-style: backup rename, write the new file in parts, and a temp-then-rename save, all in one burst.
    final = paragraphs("herons", 3) + "\n\nAddendum: the heron colony moved to the northern reed bed."
    os.rename(target, watched.folder / "plan.md~")
    with open(target, "w") as handle:
        for part in (final[:100], final[100:250], final[250:]):
            handle.write(part)
            handle.flush()
            time.sleep(0.05)
    tmp = watched.folder / ".plan.md.swp"
    tmp.write_text(final)
    os.replace(tmp, target)
    (watched.folder / "plan.md~").unlink()
    settle(watched.watcher)

    assert watched.watcher.counts["updated"] == counts.get("updated", 0) + 1, watched.watcher.counts
    assert watched.watcher.counts["deleted"] == counts.get("deleted", 0), "the save burst must not delete"
    assert watched.doc_ids() == {"docs/plan.md"}
    contents = " ".join(str(p.payload["content"]) for p in watched.engine.chunks_of(TENANT, "docs/plan.md"))
    assert "northern reed bed" in contents


def test_bad_files_are_skipped_with_reasons_and_the_watcher_keeps_going(watched: Watched) -> None:
    folder = watched.folder
    (folder / "junk.txt").write_bytes(os.urandom(2048) + b"\x00\x01")
    (folder / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me br\xfbl\xe9e, tr\xe8s bien.".encode("latin-1"))
    (folder / "photo.gif").write_bytes(b"GIF89a" + os.urandom(64))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage")
    (folder / "huge.txt").write_text("big " * 300_000)  # 1.2 MB > the 1 MB limit set below
    os.mkfifo(folder / "pipe.txt")  # reading a FIFO would block the worker forever
    watched.watcher.settings.max_file_bytes = 1_000_000  # type: ignore[misc]
    settle(watched.watcher)
    (folder / "good.md").write_text(paragraphs("cranes", 2))
    wait_for(lambda: "docs/good.md" in watched.doc_ids(), what="good file indexed after bad ones")

    skipped = {Path(s.path).name: s.reason for s in watched.status().watch_folders[0].skipped}
    assert set(skipped) == {"junk.txt", "photo.gif", "broken.pdf", "huge.txt", "pipe.txt"}
    assert "binary" in skipped["junk.txt"] or "not valid UTF-8" in skipped["junk.txt"]
    assert "not supported" in skipped["photo.gif"]
    assert "too large" in skipped["huge.txt"]
    assert "not a regular file" in skipped["pipe.txt"]
    assert skipped["broken.pdf"] and skipped["junk.txt"]
    assert watched.doc_ids() == {"docs/good.md", "docs/latin1.txt"}, "a Latin-1 file is detected and indexed"
    hit = watched.search("crème brûlée", top_k=1)[0]
    assert hit.document_id == "docs/latin1.txt" and "Café crème brûlée" in hit.content
    # Fixing a file clears its entry and indexes it.
    (folder / "junk.txt").write_text("Café crème brûlée, très bien — now plain text.")
    wait_for(lambda: "docs/junk.txt" in watched.doc_ids(), what="fixed file indexed")
    assert "junk.txt" not in {Path(s.path).name for s in watched.status().watch_folders[0].skipped}


def test_a_corrupted_update_keeps_the_last_good_version(watched: Watched) -> None:
    path = watched.folder / "report.txt"
    path.write_text(paragraphs("eagles", 3))
    wait_for(lambda: "docs/report.txt" in watched.doc_ids(), what="indexed")
    settle(watched.watcher)
    chunks = watched.engine.chunks.count([])
    path.write_bytes(b"\x00\xff" * 500)
    settle(watched.watcher)
    assert watched.doc_ids() == {"docs/report.txt"} and watched.engine.chunks.count([]) == chunks
    assert [Path(s.path).name for s in watched.status().watch_folders[0].skipped] == ["report.txt"]
