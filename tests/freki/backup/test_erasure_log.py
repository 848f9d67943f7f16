"""The erasure log: entries append durably one after another, a torn last line (a killed writer) is skipped and
kept apart from the next entry, a corrupt line elsewhere is an error (an erasure is never skipped silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from freki.store.erasure_log import ErasureEntry, ErasureLog, key_ids_of
from freki.store.errors import StoreError


def test_entries_append_and_read_back(tmp_path: Path) -> None:
    log = ErasureLog(tmp_path / "erasures.jsonl")
    assert list(log.entries()) == []
    log.append(ErasureEntry("owner", "t", ["g1", "g2"], owner_id="alice", document_ids=["a", "b"]))
    log.append(ErasureEntry("retention", "t", ["g3"], document_ids=["c"], watch_marks=[("t", "ab" * 32)]))
    entries = list(log.entries())
    assert [(e.kind, e.owner_id, e.document_ids) for e in entries] == [("owner", "alice", ["a", "b"]),
                                                                       ("retention", "", ["c"])]
    assert entries[1].watch_marks == [("t", "ab" * 32)] and entries[0].at
    assert key_ids_of(entries) == {"g1", "g2", "g3"}
    assert (tmp_path / "erasures.jsonl").stat().st_mode & 0o777 == 0o600


def test_a_torn_last_line_is_skipped_and_kept_apart(tmp_path: Path) -> None:
    path = tmp_path / "erasures.jsonl"
    log = ErasureLog(path)
    log.append(ErasureEntry("document", "t", ["g1"], document_ids=["a"]))
    with open(path, "ab") as handle:
        handle.write(b'{"kind":"owner","tenant":"t","key_i')  # a writer killed mid-line
    assert [e.key_ids for e in log.entries()] == [["g1"]]
    log.append(ErasureEntry("document", "t", ["g2"], document_ids=["b"]))
    with pytest.raises(StoreError, match="line 2, is not a valid entry"):
        list(log.entries())  # the torn line is no longer last: a person must look at it
    lines = path.read_bytes().split(b"\n")
    assert lines[2].startswith(b'{"kind":"document"'), "the next entry starts on a line of its own"
