"""Session stores (memory and SQLite) against the same rules: tenants apart, owners bound, bounded, erasable."""

from __future__ import annotations

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
    settings = SessionSettings(ttl_s=60, max_turns=4, max_sessions=3, max_turn_chars=50)
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
    sessions.append("t", "s", "alice", q("one"))
    sessions.append("t", "s", "alice", q("two"))
    sessions.append("t", "s", "alice", q("three"))
    record = sessions.get("t", "s")
    assert record is not None and record.owner_id == "alice"
    assert [t.content for t in record.turns] == ["two", "answer to two", "three", "answer to three"]


def test_tenants_never_share_a_session(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t1", "same-id", "", q("secret of t1"))
    assert sessions.get("t2", "same-id") is None
    assert not sessions.delete("t2", "same-id") and sessions.get("t1", "same-id") is not None


def test_a_session_keeps_its_owner(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t", "s", "alice", q("hello"))
    with pytest.raises(PermissionDenied, match="belongs to another data owner"):
        sessions.append("t", "s", "mallory", q("let me in"))
    sessions.append("t", "s", "", q("anonymous follow-up"))  # no owner given: the session's stays
    record = sessions.get("t", "s")
    assert record is not None and record.owner_id == "alice" and len(record.turns) == 4


def test_sessions_expire_and_renew_on_use(store: tuple[SessionStore, Clock]) -> None:
    sessions, clock = store
    sessions.append("t", "s", "", q("a"))
    clock.now += 50
    sessions.append("t", "s", "", q("b"))  # renews the 60 s expiry
    clock.now += 50
    assert sessions.get("t", "s") is not None
    clock.now += 11
    assert sessions.get("t", "s") is None


def test_least_recently_used_sessions_go_past_max_sessions(store: tuple[SessionStore, Clock]) -> None:
    sessions, clock = store
    for i in range(4):
        clock.now += 1
        sessions.append("t", f"s{i}", "", q(str(i)))
    assert sessions.get("t", "s0") is None
    assert all(sessions.get("t", f"s{i}") is not None for i in (1, 2, 3))


def test_long_turns_are_cut_and_tool_calls_round_trip(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    call = ToolCall("call_1", "weather", {"city": "Oslo", "days": [1, 2]})
    sessions.append("t", "s", "", [Turn("user", "x" * 500), Turn("assistant", "", (call,)),
                                    Turn("tool", "sunny", (), "call_1")])
    turns = sessions.get("t", "s").turns  # type: ignore[union-attr]
    assert len(turns[0].content) == 50
    assert turns[1].tool_calls == (call,) and turns[2].tool_call_id == "call_1"
    assert turns[1].message().tool_calls == (call,)


def test_erasing_an_owner_removes_only_that_owners_sessions_in_that_tenant(store: tuple[SessionStore, Clock]) -> None:
    sessions, _ = store
    sessions.append("t", "a1", "alice", q("a1"))
    sessions.append("t", "b1", "bob", q("b1"))
    sessions.append("u", "a2", "alice", q("alice elsewhere"))
    assert sessions.delete_owner("t", "alice") == 1
    assert sessions.get("t", "a1") is None and sessions.get("t", "b1") is not None
    assert sessions.get("u", "a2") is not None


def test_sqlite_erasure_leaves_no_trace_of_the_text_in_its_files(tmp_path: Path) -> None:
    settings = SessionSettings(store="sqlite", path=tmp_path / "s.db")
    sessions = SqliteSessionStore(tmp_path / "s.db", settings)
    canary = "CANARY-7f3a9c-erase-me"
    try:
        sessions.append("t", "s", "alice", q(canary))
        sessions.append("t", "other", "bob", q("keep this"))
        found = [p.name for p in tmp_path.iterdir() if canary.encode() in p.read_bytes()]
        assert found, "the canary should be on disk before erasure (else this test proves nothing)"
        assert sessions.delete_owner("t", "alice") == 1
        found = [p.name for p in tmp_path.iterdir() if canary.encode() in p.read_bytes()]
        assert found == []
        assert sessions.get("t", "other") is not None
    finally:
        sessions.close()


def test_two_sqlite_stores_on_one_file_see_each_others_sessions(tmp_path: Path) -> None:
    """What two Geri replicas on a shared volume rely on."""
    settings = SessionSettings(store="sqlite", path=tmp_path / "s.db")
    one, two = SqliteSessionStore(tmp_path / "s.db", settings), SqliteSessionStore(tmp_path / "s.db", settings)
    try:
        one.append("t", "s", "", q("asked on replica one"))
        two.append("t", "s", "", q("asked on replica two"))
        record = one.get("t", "s")
        assert record is not None
        assert [t.content for t in record.turns if t.role == "user"] == ["asked on replica one", "asked on replica two"]
    finally:
        one.close()
        two.close()
