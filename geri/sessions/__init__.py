"""Conversation history Geri keeps per (tenant, user, session_id), so a client can send only the new question.

``store.SessionStore`` is the interface; ``memory.MemorySessionStore`` (one process, bounded LRU) and
``sqlite.SqliteSessionStore`` (one file shared by replicas) implement it; ``make_store`` picks one from
the settings. Sessions expire after ``sessions.ttl_s``, keep at most ``sessions.max_turns`` turns, are
reached only by the ``x-wolf-user`` that created them (another user's id names another conversation), are
bound to the data owner that created them, and are erased with that owner (DeleteOwnerSessions).
"""

from __future__ import annotations

from geri.sessions.memory import MemorySessionStore
from geri.sessions.sqlite import SqliteSessionStore
from geri.sessions.store import SessionRecord, SessionStore, Turn
from geri.settings import SessionSettings


def make_store(settings: SessionSettings) -> SessionStore:
    """The store ``settings.store`` names."""
    if settings.store == "sqlite":
        assert settings.path is not None  # checked by SessionSettings
        return SqliteSessionStore(settings.path, settings)
    return MemorySessionStore(settings)


__all__ = ["MemorySessionStore", "SessionRecord", "SessionStore", "SqliteSessionStore", "Turn", "make_store"]
