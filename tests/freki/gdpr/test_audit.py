"""AuditLog: one JSON line per event, appended, never holding content."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from wolf_service.audit_log import MAX_DETAIL_CHARS, AuditLog, AuditRotation, read_audit_log


def test_events_are_appended_as_json_lines_in_order(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "audit.jsonl"  # parent created on first write
    log = AuditLog(path)
    log.record(actor="alice", action="gdpr.erase_owner", target="tenant=t owner=o", outcome="ok", documents=2)
    log.record(actor="", action="gdpr.export_owner", target="tenant=t owner=o", outcome="error", code="NOT_FOUND")

    events = list(read_audit_log(path))
    assert [e["action"] for e in events] == ["gdpr.erase_owner", "gdpr.export_owner"]
    assert events[0]["actor"] == "alice" and events[0]["documents"] == 2 and events[0]["outcome"] == "ok"
    assert events[1]["actor"] == "unknown" and events[1]["code"] == "NOT_FOUND"
    assert datetime.fromisoformat(events[0]["at"]).tzinfo is not None
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # A second AuditLog on the same file appends rather than truncates.
    AuditLog(path).record(actor="bob", action="a", target="t", outcome="ok")
    assert len(path.read_text().splitlines()) == 3


@pytest.mark.parametrize(
    "details",
    [
        {"content": "x" * (MAX_DETAIL_CHARS + 1)},
        {"chunks": ["some", "text"]},
        {"payload": {"content": "secret"}},
        {"actor": "mallory"},
    ],
)
def test_details_that_could_hold_content_are_refused_and_nothing_is_written(tmp_path: Path, details: dict) -> None:
    path = tmp_path / "audit.jsonl"
    with pytest.raises((ValueError, TypeError)):
        AuditLog(path).record(actor="a", action="x", target="t", outcome="ok", **details)
    assert not path.exists()


def test_missing_log_reads_as_empty(tmp_path: Path) -> None:
    assert list(read_audit_log(tmp_path / "none.jsonl")) == []


_WRITER = """
import sys
from wolf_service.audit_log import AuditLog
log = AuditLog(sys.argv[1])
for i in range(50):
    log.record(actor="w" + sys.argv[2], action="load", target=f"doc-{i}", outcome="ok", pad="p" * 400)
"""


def test_concurrent_processes_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    root = Path(__file__).resolve().parents[3]
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w)], cwd=root) for w in range(3)
    ]
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    lines = path.read_text().splitlines()
    assert len(lines) == 150
    events = [json.loads(line) for line in lines]  # every line parses: none were torn
    assert sorted({e["actor"] for e in events}) == ["w0", "w1", "w2"]


_ROTATING_WRITER = """
import sys
from wolf_service.audit_log import AuditLog, AuditRotation
log = AuditLog(sys.argv[1], AuditRotation(max_bytes=4000, backups=100))
for i in range(50):
    log.record(actor="w" + sys.argv[2], action="load", target=f"doc-{i}", outcome="ok", pad="p" * 400)
"""


def test_rotation_by_size_loses_nothing_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    root = Path(__file__).resolve().parents[3]
    procs = [subprocess.Popen([sys.executable, "-c", _ROTATING_WRITER, str(path), str(w)], cwd=root)
             for w in range(3)]
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    files = [path, *sorted(tmp_path.glob("audit.jsonl.[0-9]*"))]
    assert len(files) > 10 and all(f.stat().st_size <= 4000 for f in files)
    assert all((f.stat().st_mode & 0o777) == 0o600 for f in files)
    events = list(read_audit_log(path, rotated=True))
    assert len(events) == 150  # every event of every writer, none torn or lost in a rename
    for writer in ("w0", "w1", "w2"):  # and in order, oldest file first
        assert [e["target"] for e in events if e["actor"] == writer] == [f"doc-{i}" for i in range(50)]


def test_rotation_keeps_only_the_configured_backups(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl", AuditRotation(max_bytes=300, backups=2))
    for i in range(10):
        log.record(actor="a", action="x", target=f"t{i}", outcome="ok", pad="p" * 150)
    assert sorted(p.name for p in tmp_path.glob("audit.jsonl*") if not p.name.endswith(".lock")) == [
        "audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert [e["target"] for e in read_audit_log(tmp_path / "audit.jsonl", rotated=True)] == ["t7", "t8", "t9"]
