"""Confirmed tool calls claimed in one SQLite file: several processes resuming the same conversations run a
confirmed call once (odin_client/tools/idempotency_store.py)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from odin_client import OdinSettings
from odin_client.tools.confirmations import RUNNING, PendingConfirmation
from odin_client.tools.driving import idempotency_log, loop_options
from odin_client.tools.idempotency_store import SqliteIdempotencyLog
from odin_client.types.errors import OdinError
from tests.odin_client.test_tool_confirmations import booking_registry, run
from tests.odin_client.test_tools import ScriptedGeri, call, gen

SECRET = "s" * 40
ROOT = Path(__file__).resolve().parents[2]

CLAIM = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from odin_client.tools.idempotency_store import SqliteIdempotencyLog
    log = SqliteIdempotencyLog(Path(sys.argv[1]), sys.argv[2].encode())
    while time.time() < float(sys.argv[3]):  # start together
        time.sleep(0.001)
    got = log.claim("the-key")
    if got is None:
        log.finish("the-key", "ran in " + sys.argv[4])
    print("won" if got is None else "lost")
""")


def test_of_six_processes_claiming_one_key_at_once_exactly_one_runs(tmp_path: Path) -> None:
    import time

    start = time.time() + 3
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'protos'}", "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", CLAIM, str(tmp_path / "calls.sqlite"), SECRET, str(start),
                               str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(6)]
    outcomes = [p.communicate(timeout=60) for p in procs]
    assert sorted(out.strip() for out, _ in outcomes) == ["lost"] * 5 + ["won"], outcomes
    result = SqliteIdempotencyLog(tmp_path / "calls.sqlite", SECRET.encode()).claim("the-key")
    assert result is not None and result.startswith("ran in ")


def test_a_confirmation_resumed_by_another_process_does_not_run_the_tool_again(tmp_path: Path) -> None:
    registry, runs = booking_registry()
    path = tmp_path / "calls.sqlite"
    first_worker, second_worker = (SqliteIdempotencyLog(path, SECRET.encode()) for _ in range(2))
    geri = ScriptedGeri(gen("Checking.", (call("book_viewing", "c2"),)))
    first = run(geri, registry, first_worker)
    pending = PendingConfirmation.from_dict(json.loads(json.dumps(first.to_dict()["requires_confirmation"])))
    geri.replies = [gen("Booked.")]
    run(geri, registry, first_worker, resume=pending, confirmed=("c2",))
    geri.replies = [gen("Booked.")]  # the double click lands on another worker, which shares the file
    again = run(geri, registry, second_worker, resume=pending, confirmed=("c2",))
    assert len(runs) == 1 and again.calls[0].outcome == "repeated"
    assert json.loads(again.calls[0].result) == {"booked": "Oslo"}


def test_a_run_that_never_recorded_its_result_is_not_run_again(tmp_path: Path) -> None:
    crashed = SqliteIdempotencyLog(tmp_path / "calls.sqlite", SECRET.encode())
    assert crashed.claim("k") is None  # claimed, then the process died before finish()
    crashed.close()
    assert SqliteIdempotencyLog(tmp_path / "calls.sqlite", SECRET.encode()).claim("k") == RUNNING


def test_the_settings_choose_the_log_and_a_shared_file_needs_a_shared_secret(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="tool_idempotency_secret must be set"):
        OdinSettings(tool_idempotency_log=tmp_path / "calls.sqlite")
    with pytest.raises(ValidationError, match="tool_idempotency_secret"):
        OdinSettings(tool_idempotency_secret="too short")
    shared = OdinSettings(tool_idempotency_log=tmp_path / "calls.sqlite", tool_idempotency_secret=SECRET)
    log = loop_options(shared, max_steps=None, first_tool_choice="auto").idempotency
    assert isinstance(log, SqliteIdempotencyLog) and idempotency_log(shared) is log
    other = SqliteIdempotencyLog(tmp_path / "other.sqlite", SECRET.encode())
    booking = call("book_viewing", "c2")
    assert log.key(booking, "immo", "chat-1") == other.key(booking, "immo", "chat-1")  # resumable elsewhere


def test_a_damaged_log_file_is_named_with_its_setting(tmp_path: Path) -> None:
    damaged = tmp_path / "calls.sqlite"
    damaged.write_bytes(b"not a database " * 200)
    settings = OdinSettings(tool_idempotency_log=damaged, tool_idempotency_secret=SECRET)
    with pytest.raises(OdinError, match=r"tool_idempotency_log .*calls\.sqlite.*not a database"):
        loop_options(settings, max_steps=None, first_tool_choice="auto")
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OdinError, match="tool_idempotency_log"):  # its folder cannot be made
        SqliteIdempotencyLog(tmp_path / "a-file" / "calls.sqlite", SECRET.encode())


def test_a_confirmed_call_the_log_cannot_claim_is_not_run_and_the_turn_goes_on(tmp_path: Path) -> None:
    registry, runs = booking_registry()
    path = tmp_path / "calls.sqlite"
    log = SqliteIdempotencyLog(path, SECRET.encode(), busy_timeout_s=0.1)
    geri = ScriptedGeri(gen("Checking.", (call("book_viewing", "c2"),)))
    pending = PendingConfirmation.from_dict(run(geri, registry, log).to_dict()["requires_confirmation"])
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the file (or the disk is full, or it is read-only)
    try:
        geri.replies = [gen("I could not book it.")]
        turn = run(geri, registry, log, resume=pending, confirmed=("c2",))
    finally:
        writer.execute("ROLLBACK")
    assert runs == [] and turn.calls[0].outcome == "error"
    assert "tool_idempotency_log" in turn.calls[0].result and "not run" in turn.calls[0].result
    geri.replies = [gen("Booked.")]  # confirmed again once the file is free: it runs, once
    assert run(geri, registry, log, resume=pending, confirmed=("c2",)).calls[0].outcome == "ok"
    assert len(runs) == 1


def test_a_result_the_log_cannot_record_still_reaches_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    log = SqliteIdempotencyLog(path, SECRET.encode(), busy_timeout_s=0.1)
    assert log.claim("k") is None
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        log.finish("k", "the tool's result")  # the call has run: its result is the caller's, logged or not
    finally:
        writer.execute("ROLLBACK")
    assert log.claim("k") == RUNNING  # at most once: the claim stands


def test_a_call_resumed_under_another_secret_is_refused_naming_the_secret(tmp_path: Path) -> None:
    registry, runs = booking_registry()
    geri = ScriptedGeri(gen("Checking.", (call("book_viewing", "c2"),)))
    first = run(geri, registry, SqliteIdempotencyLog(tmp_path / "calls.sqlite", SECRET.encode()))
    pending = PendingConfirmation.from_dict(first.to_dict()["requires_confirmation"])
    other = SqliteIdempotencyLog(tmp_path / "calls.sqlite", b"another secret of 32 characters or more")
    geri.replies = [gen("Not booked.")]
    turn = run(geri, registry, other, resume=pending, confirmed=("c2",))
    assert runs == [] and turn.calls[0].outcome == "invalid"
    assert "tool_idempotency_secret" in turn.calls[0].result
