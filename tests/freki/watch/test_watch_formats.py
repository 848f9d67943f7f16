"""A watched folder picks up the office, e-mail and e-book formats: real folder, watchdog, engine and model."""

from __future__ import annotations

import pytest

from tests.freki.ingest.office_files_support import build_epub, build_msg, build_pptx
from tests.freki.watch.conftest import Watched, settle, wait_for

pytestmark = pytest.mark.integration


def test_new_formats_dropped_into_the_folder_are_indexed_and_searchable(watched: Watched) -> None:
    deck = build_pptx([{"title": "Ferry times", "body": ["The Sleipnir ferry leaves pier 8 at dawn."]}])
    (watched.folder / "ferry.pptx").write_bytes(deck)
    (watched.folder / "handbook.epub").write_bytes(build_epub(
        [("Kitchen", "<h1>Kitchen</h1><p>The dishwasher on floor three is emptied by whoever fills it last.</p>")]))
    (watched.folder / "note.msg").write_bytes(build_msg("The boiler in block C is serviced every May."))
    wanted = {"docs/ferry.pptx", "docs/handbook.epub", "docs/note.msg"}
    wait_for(lambda: wanted <= watched.doc_ids(), what="pptx, epub and msg indexed")
    settle(watched.watcher)
    hit = watched.search("when does the ferry leave pier 8", top_k=1)[0]
    assert hit.document_id == "docs/ferry.pptx" and hit.metadata["slide"] == "1"
    assert watched.search("who empties the dishwasher", top_k=1)[0].document_id == "docs/handbook.epub"
    assert watched.search("boiler service month", top_k=1)[0].document_id == "docs/note.msg"
    assert not watched.status().watch_folders[0].skipped
