"""The session store interface and the records it keeps."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from geri.backends.base import ChatMessage, ToolCall
from geri.settings import SessionSettings
from wolf_service.errors import PermissionDenied


@dataclass(frozen=True)
class Turn:
    """One stored turn: a question, an answer (maybe with tool calls), or a tool result."""

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""

    def message(self) -> ChatMessage:
        """The turn as a chat message for a backend."""
        return ChatMessage(self.role, self.content, self.tool_calls, self.tool_call_id)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (for the SQLite store)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Turn:
        """Inverse of :meth:`to_json`."""
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in data.get("tool_calls", ()))
        return cls(data["role"], data["content"], calls, data.get("tool_call_id", ""))


# The user of a session whose creator is not known (a row kept from before sessions were bound to users).
# No validated user id can equal it (``<`` and ``>`` are outside the user id alphabet), so nobody continues
# or reads such a session; it expires, and erasing its data owner removes it.
UNKNOWN_USER = "<unknown>"


@dataclass(frozen=True)
class SessionRecord:
    """A conversation: whose it is, its turns (oldest first) and when it expires (epoch seconds).

    ``user_id`` is the ``x-wolf-user`` that created it ("" for a caller without one): it is part of the key,
    so the same session id names a different conversation for every user. ``owner_id`` is the data owner
    whose erasure erases it.
    """

    tenant: str
    session_id: str
    owner_id: str
    turns: tuple[Turn, ...] = ()
    updated_at: float = field(default_factory=time.time)
    expires_at: float = 0.0
    user_id: str = ""


class SessionStore(Protocol):
    """Where conversations live. Every method is keyed by tenant and user: one tenant never sees another's
    sessions, and inside a tenant one user's session id never reaches another user's conversation."""

    def get(self, tenant: str, session_id: str, *, user: str) -> SessionRecord | None:
        """The session, or None when it does not exist, has expired or belongs to another user."""
        ...

    def append(self, tenant: str, session_id: str, owner_id: str, turns: Sequence[Turn], *,
               user: str) -> SessionRecord:
        """Add turns (creating the session), keep the newest ``max_turns``, renew its expiry.

        Raises:
            PermissionDenied: the session belongs to another data owner.
        """
        ...

    def delete(self, tenant: str, session_id: str, *, user: str) -> bool:
        """Forget one of ``user``'s sessions; whether it existed."""
        ...

    def delete_owner(self, tenant: str, owner_id: str) -> int:
        """Forget every session of a data owner in a tenant, whichever user created it; how many."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...


def check_owner(record: SessionRecord | None, owner_id: str) -> None:
    """A session keeps its owner: another non-empty owner may not read or extend it."""
    if record is not None and record.owner_id and owner_id and record.owner_id != owner_id:
        raise PermissionDenied(
            f"session {record.session_id[:64]!r} belongs to another data owner than {owner_id[:64]!r}"
        )


def extended(record: SessionRecord | None, tenant: str, session_id: str, owner_id: str,
             turns: Sequence[Turn], settings: SessionSettings, now: float, user: str) -> SessionRecord:
    """``record`` (``user``'s own, or None) with ``turns`` appended, cut to the limits, owner bound and
    expiry renewed."""
    check_owner(record, owner_id)
    cut = [replace(t, content=t.content[: settings.max_turn_chars]) for t in turns]
    kept = (*(record.turns if record else ()), *cut)[-settings.max_turns:]
    owner = (record.owner_id if record else "") or owner_id
    return SessionRecord(tenant, session_id, owner, tuple(kept), now, now + settings.ttl_s, user)
