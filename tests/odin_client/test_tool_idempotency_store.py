"""Confirmed tool calls claimed in one SQLite file: several processes resuming the same conversations run a
confirmed call once (odin_client/tools/idempotency_store.py)."""

from __future__ import annotations

import json
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
