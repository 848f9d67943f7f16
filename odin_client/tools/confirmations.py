"""Tool calls that wait for the user across requests, and idempotency keys so a confirmed call runs once.

With ``defer_confirmation`` the loop does not ask a callback: a call of a tool marked ``confirm`` ends the
turn with ``stopped == "requires_confirmation"`` and a :class:`PendingConfirmation` naming what would run,
with its arguments (shown to the user). The next request passes it back as ``resume`` together with the
ids the user ``confirmed``; the loop runs those (checked by the registry again), declines the rest, hands
every result to the model and goes on. ``PendingConfirmation.to_dict`` / ``from_dict`` carry it through a
web front end or a queue.

Each pending call has an ``idempotency_key``: an HMAC of tenant, session, call id, tool and arguments under
the :class:`IdempotencyLog`'s secret, so a pending call whose arguments were changed after the user saw them
is refused (processes sharing pending state share the secret). Before a confirmed call runs, its key is
claimed in the log; a re-sent confirmation (a double click, a retried request) finds the key claimed and
gets the first run's result back: the handler ran once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from wolf.v1 import common_pb2

from odin_client.types.errors import OdinError
from odin_client.types.results import ToolCallRequest

RUNNING = json.dumps({"error": "this confirmed call is already running (sent twice); it runs once"})


class IdempotencyLogUnavailable(OdinError):
    """The log of confirmed calls cannot be read or written (its message names the file and the setting)."""


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for the user: what would run, with its arguments, and the key that makes it run once."""

    id: str
    name: str
    arguments: dict[str, Any]
    idempotency_key: str

    def request(self) -> ToolCallRequest:
        """The call as the model asked for it."""
        return ToolCallRequest(id=self.id, name=self.name, arguments=dict(self.arguments))


@dataclass(frozen=True)
class PendingConfirmation:
    """Where a turn stopped: the calls waiting for the user, the tool results already due to the model, and
    (without a Geri session, which stores the conversation itself) the conversation so far."""

    calls: list[PendingCall]
    results: list[common_pb2.ChatTurn] = field(default_factory=list)
    history: list[common_pb2.ChatTurn] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``from_dict`` reads it back)."""
        return {"calls": [vars(c) for c in self.calls], "results": [_turn_dict(t) for t in self.results],
                "history": [_turn_dict(t) for t in self.history]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingConfirmation:
        """The pending confirmation ``to_dict`` wrote."""
        return cls(calls=[PendingCall(**c) for c in data.get("calls", [])],
                   results=[_turn(t) for t in data.get("results", [])],
                   history=[_turn(t) for t in data.get("history", [])])


class IdempotencyLog:
    """Keys of confirmed calls and their results, the newest ``max_entries`` kept (in this process).

    Args:
        secret: Signs the keys; random per process unless given (give the same one to every process that
            may resume another's pending calls).
    """

    def __init__(self, max_entries: int = 10_000, secret: bytes | None = None) -> None:
        self._secret = secret or os.urandom(32)
        self._max = max_entries
        self._results: OrderedDict[str, str | None] = OrderedDict()  # None: claimed, still running
        self._lock = threading.Lock()

    def key(self, call: ToolCallRequest, tenant: str, session_id: str) -> str:
        """The key of one call in one conversation: the same call re-sent has the same key."""
        text = json.dumps([tenant, session_id, call.id, call.name, call.arguments], sort_keys=True, default=str)
        return hmac.new(self._secret, text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def claim(self, key: str) -> str | None:
        """None when this caller may run the call now (the key is claimed for it); otherwise the result of
        the run that claimed it first (``RUNNING`` while that run is not finished).

        Raises:
            IdempotencyLogUnavailable: the key cannot be claimed (the call must not run).
        """
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                found = self._results[key]
                return RUNNING if found is None else found
            self._results[key] = None
            while len(self._results) > self._max:
                self._results.popitem(last=False)
            return None

    def finish(self, key: str, result: str) -> None:
        """Record the result of the run that claimed ``key``."""
        with self._lock:
            self._results[key] = result


# Shared by the registries of one process, so a registry built anew for the next request still knows
# which confirmed calls have run.
SHARED_LOG = IdempotencyLog()


def _turn_dict(turn: common_pb2.ChatTurn) -> dict[str, Any]:
    return {"role": turn.role, "content": turn.content, "tool_call_id": turn.tool_call_id,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments_json": c.arguments_json}
                           for c in turn.tool_calls]}


def _turn(data: dict[str, Any]) -> common_pb2.ChatTurn:
    return common_pb2.ChatTurn(role=str(data.get("role", "")), content=str(data.get("content", "")),
                               tool_call_id=str(data.get("tool_call_id", "")),
                               tool_calls=[common_pb2.ToolCall(**c) for c in data.get("tool_calls", [])])
