"""The quarantine list kept in a file: read back at the next start, emptied of erased documents, and a file
that cannot be read is not fatal. (Through a real server with flipped bytes: tests/freki/api/test_corruption.py.)"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from freki.store.integrity import Quarantine


def test_entries_are_read_back_and_one_being_healed_is_pending_again(tmp_path: Path) -> None:
    path = tmp_path / "integrity" / "quarantine.json"
    first = Quarantine(path)
    first.add("c1", "freki_chunks", "vector sketch mismatch", {"tenant_id": "t", "document_id": "d1"})
    first.add("c2", "freki_chunks", "payload digest mismatch", {"tenant_id": "t", "document_id": "d2"})
    first.mark(["c1"], "healing")
    first.mark(["c2"], "failed: no kept source")
    again = Quarantine(path)
    assert {(e.chunk_id, e.document_id, e.heal) for e in again.entries()} == {
        ("c1", "d1", "pending"), ("c2", "d2", "failed: no kept source")}
    again.resolve(["c2"])
    assert [e.chunk_id for e in Quarantine(path).entries()] == ["c1"]


def test_an_erased_documents_entries_leave_the_file(tmp_path: Path) -> None:
    path = tmp_path / "quarantine.json"
    quarantine = Quarantine(path)
    quarantine.add("c1", "freki_chunks", "bad", {"tenant_id": "t", "document_id": "jane-doe-contract"})
    quarantine.add("c2", "freki_chunks", "bad", {"tenant_id": "other", "document_id": "jane-doe-contract"})
    quarantine.forget("t", "jane-doe-contract")
    assert [e.chunk_id for e in Quarantine(path).entries()] == ["c2"]
    assert "c1" not in path.read_text()


@pytest.mark.parametrize("content", ["{not json", '{"a": 1}', '[{"chunk_id": "c1", "bogus": 2}, 3]'])
def test_an_unreadable_file_starts_an_empty_list(tmp_path: Path, content: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "quarantine.json"
    path.write_text(content)
    with caplog.at_level(logging.WARNING, logger="freki.integrity"):
        quarantine = Quarantine(path)
    assert quarantine.entries() == []
    assert "cannot be read" in caplog.text
    quarantine.add("c9", "freki_chunks", "bad", {"tenant_id": "t", "document_id": "d"})
    assert [row["chunk_id"] for row in json.loads(path.read_text())][-1] == "c9"


@pytest.mark.integration
def test_deleting_a_document_through_the_engine_drops_its_entries(freki_server) -> None:  # type: ignore[no-untyped-def]
    """Wiring: the engine's delete (and erasure) reaches the kept list of a real Freki."""
    from freki.engine import FrekiEngine
    from freki.ingest.indexing import IndexInput

    _, engine = freki_server
    assert isinstance(engine, FrekiEngine)
    engine.index(IndexInput(tenant_id="t", document_id="jane-doe-note", data=b"Jane's note about the boiler.",
                            source="", content_type="text"))
    engine.quarantine.add("c-jane", "freki_chunks", "vector sketch mismatch",
                          {"tenant_id": "t", "document_id": "jane-doe-note"})
    kept = Path(engine.settings.data_dir) / "integrity" / "quarantine.json"
    assert "jane-doe-note" in kept.read_text()
    engine.delete_document("t", "jane-doe-note", erase=True)
    assert "jane-doe-note" not in kept.read_text()
    assert "c-jane" not in engine.quarantine
