"""Session stores (memory and SQLite) against the same rules: tenants and users apart, owners bound, bounded,
erasable; and the migration of a SQLite file from before sessions were bound to users."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from geri.backends.base import ToolCall
from geri.sessions import MemorySessionStore, SessionStore, SqliteSessionStore, Turn
from geri.settings import SessionSettings
from wolf_service.errors import PermissionDenied


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SessionStore, Clock]]:
    clock = Clock()
    settings = SessionSettings(ttl_s=60, max_turns=4, max_sessions=4, max_sessions_per_tenant=3, max_turn_chars=50)
    made: SessionStore = (MemorySessionStore(settings, clock) if request.param == "memory"
                          else SqliteSessionStore(tmp_path / "sessions.db", settings, clock))
    try:
        yield made, clock
    finally:
        made.close()


def q(text: str) -> list[Turn]:
    return [Turn("user", text), Turn("assistant", f"answer to {text}")]


def test_turns_accumulate_oldest_first_and_the_oldest_go_past_max_turns(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t", "s", "alice", q("one"), user="")
    sessions.append("t", "s", "alice", q("two"), user="")
    sessions.append("t", "s", "alice", q("three"), user="")
    record = sessions.get("t", "s", user="")
    assert record is not None and record.owner_id == "alice"
    assert [t.content for t in record.turns] == ["two", "answer to two", "three", "answer to three"]


def test_tenants_never_share_a_session(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t1", "same-id", "", q("secret of t1"), user="")
    assert sessions.get("t2", "same-id", user="") is None
    assert not sessions.delete("t2", "same-id", user="") and sessions.get("t1", "same-id", user="") is not None


def test_a_session_keeps_its_owner(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t", "s", "alice", q("hello"), user="")
    with pytest.raises(PermissionDenied, match="belongs to another data owner"):
        sessions.append("t", "s", "mallory", q("let me in"), user="")
    sessions.append("t", "s", "", q("anonymous follow-up"), user="")  # no owner given: the session's stays
    record = sessions.get("t", "s", user="")
    assert record is not None and record.owner_id == "alice" and len(record.turns) == 4


def test_sessions_expire_and_renew_on_use(store: tuple[SessionStore, Clock]) -> None:
    sessions, clock = store
    sessions.append("t", "s", "", q("a"), user="")
    clock.now += 50
    sessions.append("t", "s", "", q("b"), user="")  # renews the 60 s expiry
    clock.now += 50
    assert sessions.get("t", "s", user="") is not None
    clock.now += 11
    assert sessions.get("t", "s", user="") is None


def test_least_recently_used_sessions_go_past_max_sessions(store: tuple[SessionStore, Clock]) -> None:
    sessions, clock = store
    for i in range(5):
        clock.now += 1
        sessions.append(f"t{i}", f"s{i}", "", q(str(i)), user="")
    assert sessions.get("t0", "s0", user="") is None
    assert all(sessions.get(f"t{i}", f"s{i}", user="") is not None for i in (1, 2, 3, 4))


def test_a_tenant_past_its_bound_loses_its_own_oldest_session_not_another_tenants(
        store: tuple[SessionStore, Clock]) -> None:
    sessions, clock = store
    sessions.append("quiet", "kept", "", q("mine"), user="")
    for i in range(5):
        clock.now += 1
        sessions.append("noisy", f"s{i}", "", q(str(i)), user=f"u{i}")
    assert sessions.get("quiet", "kept", user="") is not None
    assert [i for i in range(5) if sessions.get("noisy", f"s{i}", user=f"u{i}") is not None] == [2, 3, 4]
    sessions.delete("noisy", "s4", user="u4")  # a deleted session frees its place in the tenant's bound
    clock.now += 1
    sessions.append("noisy", "s5", "", q("5"), user="u5")
    assert sessions.get("noisy", "s2", user="u2") is not None


def test_long_turns_are_cut_and_tool_calls_round_trip(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    call = ToolCall("call_1", "weather", {"city": "Oslo", "days": [1, 2]})
    sessions.append("t", "s", "", [Turn("user", "x" * 500), Turn("assistant", "", (call,)),
                                    Turn("tool", "sunny", (), "call_1")], user="")
    turns = sessions.get("t", "s", user="").turns  # type: ignore[union-attr]
    assert len(turns[0].content) == 50
    assert turns[1].tool_calls == (call,) and turns[2].tool_call_id == "call_1"
    assert turns[1].message().tool_calls == (call,)


def test_erasing_an_owner_removes_only_that_owners_sessions_in_that_tenant(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t", "a1", "alice", q("a1"), user="")
    sessions.append("t", "b1", "bob", q("b1"), user="")
    sessions.append("u", "a2", "alice", q("alice elsewhere"), user="")
    assert sessions.delete_owner("t", "alice") == 1
    assert sessions.get("t", "a1", user="") is None and sessions.get("t", "b1", user="") is not None
    assert sessions.get("u", "a2", user="") is not None


def test_sqlite_erasure_leaves_no_trace_of_the_text_in_its_files(tmp_path: Path) -> None:
    settings = SessionSettings(store="sqlite", path=tmp_path / "s.db")
    sessions = SqliteSessionStore(tmp_path / "s.db", settings)
    canary = "CANARY-7f3a9c-erase-me"
    try:
        sessions.append("t", "s", "alice", q(canary), user="")
        sessions.append("t", "other", "bob", q("keep this"), user="")
        found = [p.name for p in tmp_path.iterdir() if canary.encode() in p.read_bytes()]
        assert found, "the canary should be on disk before erasure (else this test proves nothing)"
        assert sessions.delete_owner("t", "alice") == 1
        found = [p.name for p in tmp_path.iterdir() if canary.encode() in p.read_bytes()]
        assert found == []
        assert sessions.get("t", "other", user="") is not None
    finally:
        sessions.close()


def test_two_sqlite_stores_on_one_file_see_each_others_sessions(tmp_path: Path) -> None:
    """What two Geri replicas on a shared volume rely on."""
    settings = SessionSettings(store="sqlite", path=tmp_path / "s.db")
    one, two = SqliteSessionStore(tmp_path / "s.db", settings), SqliteSessionStore(tmp_path / "s.db", settings)
    try:
        one.append("t", "s", "", q("asked on replica one"), user="")
        two.append("t", "s", "", q("asked on replica two"), user="")
        record = one.get("t", "s", user="")
        assert record is not None
        assert [t.content for t in record.turns if t.role == "user"] == ["asked on replica one", "asked on replica two"]
    finally:
        one.close()
        two.close()


def test_a_users_session_id_never_reaches_another_users_conversation(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t", "s", "cust-1", q("alice's secret"), user="alice")
    for other in ("bob", ""):  # another user, and a caller without a user id
        assert sessions.get("t", "s", user=other) is None
        assert not sessions.delete("t", "s", user=other)
        # Naming the same id (and even the same data owner) starts the caller's own conversation.
        mine = sessions.append("t", "s", "cust-1", q(f"{other or 'anonymous'} asks"), user=other)
        assert "alice's secret" not in str(mine.turns) and mine.user_id == other
    alices = sessions.get("t", "s", user="alice")
    assert alices is not None and [t.content for t in alices.turns][0] == "alice's secret"
    assert sessions.delete_owner("t", "cust-1") == 3  # erasure reaches every user's session of the owner


def test_a_sqlite_session_keeps_its_user_across_a_restart(tmp_path: Path) -> None:
    settings = SessionSettings(store="sqlite", path=tmp_path / "s.db")
    first = SqliteSessionStore(tmp_path / "s.db", settings)
    first.append("t", "s", "", q("before the restart"), user="alice")
    first.close()
    again = SqliteSessionStore(tmp_path / "s.db", settings)
    try:
        assert again.get("t", "s", user="bob") is None and again.get("t", "s", user="") is None
        record = again.get("t", "s", user="alice")
        assert record is not None and record.user_id == "alice" and record.turns[0].content == "before the restart"
    finally:
        again.close()


_OLD_SCHEMA = """
CREATE TABLE sessions (tenant TEXT NOT NULL, session_id TEXT NOT NULL, owner_id TEXT NOT NULL, turns TEXT NOT NULL,
    updated_at REAL NOT NULL, expires_at REAL NOT NULL, PRIMARY KEY (tenant, session_id));
CREATE INDEX sessions_owner ON sessions (tenant, owner_id);
CREATE INDEX sessions_updated ON sessions (updated_at);
"""


def test_an_old_sqlite_file_migrates_in_place_without_losing_a_row(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with sqlite3.connect(path) as old:  # a file written before sessions were bound to users
        old.executescript(_OLD_SCHEMA)
        turns = '[{"role": "user", "content": "old question"}]'
        old.executemany("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?)", [
            ("t", "anon", "", turns, 1.0, 4e9), ("t", "owned", "agent-a", turns, 1.0, 4e9)])
    old.close()
    settings = SessionSettings(store="sqlite", path=path)
    migrated = SqliteSessionStore(path, settings)
    try:
        anon = migrated.get("t", "anon", user="")  # written without a user id: stays with such callers
        assert anon is not None and anon.turns[0].content == "old question"
        # Its writer is unknown: no user reaches it, not even one named like its owner...
        assert all(migrated.get("t", "owned", user=u) is None for u in ("", "agent-a", "agent-b"))
        migrated.append("t", "owned", "agent-a", q("new"), user="agent-a")  # ...who starts a fresh one
        assert migrated.delete_owner("t", "agent-a") == 2  # and erasing the owner still removes the old row
    finally:
        migrated.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT user_id, session_id FROM sessions").fetchall() == [("", "anon")]
        assert {r[1] for r in db.execute("PRAGMA index_list(sessions)")} >= {"sessions_owner", "sessions_updated"}
    db.close()
    SqliteSessionStore(path, settings).close()  # opening a migrated file again changes nothing


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_session_just_written_is_never_the_one_evicted_even_within_one_clock_tick(
        kind: str, tmp_path: Path) -> None:
    clock = Clock()  # a coarse clock: every write below has the same time
    settings = SessionSettings(ttl_s=60, max_sessions=2, max_sessions_per_tenant=1)
    sessions: SessionStore = (MemorySessionStore(settings, clock) if kind == "memory"
                              else SqliteSessionStore(tmp_path / "sessions.db", settings, clock))
    try:
        for i in range(8):
            tenant = "noisy" if i % 3 else "quiet"
            clock.now -= 10 if i == 4 else 0  # and a clock set back
            sessions.append(tenant, f"s{i}", "", q(str(i)), user="")
            assert sessions.get(tenant, f"s{i}", user="") is not None, f"s{i} was evicted as it was written"
    finally:
        sessions.close()
