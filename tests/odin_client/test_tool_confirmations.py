"""Tool calls that need confirmation end the turn (``requires_confirmation``) and resume on the next request;
an idempotency key makes a re-sent confirmation run the tool once. Scripted Geri replies (a seam: what the
model asks for is chosen by the test); ``test_end_to_end`` runs the same with the real Geri and SmolLM2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from odin_client import OdinClient, OdinSettings
from odin_client.tools import Tool, ToolRegistry
from odin_client.tools.confirmations import IdempotencyLog, PendingConfirmation
from tests.odin_client.test_tools import CITY, ScriptedGeri, call, gen
from wolf_service.audit_log import AuditLog, read_audit_log


def booking_registry() -> tuple[ToolRegistry, list[dict[str, Any]]]:
    runs: list[dict[str, Any]] = []

    def book_viewing(city: str, user_id: str = "", tenant_id: str = "") -> dict[str, str]:
        runs.append({"city": city, "user_id": user_id, "tenant_id": tenant_id})
        return {"booked": city}

    weather = Tool("get_weather", "Weather now", CITY, lambda city: {"sky": "sunny"})
    return ToolRegistry([weather, Tool("book_viewing", "Book a viewing", CITY, book_viewing, confirm=True)]), runs


def run(geri: ScriptedGeri, registry: ToolRegistry, log: IdempotencyLog, audit: AuditLog | None = None,
        **options: Any) -> Any:
    client = OdinClient(OdinSettings(tool_timeout_s=5.0))
    client.generate = geri  # type: ignore[method-assign]  # the seam: Geri's replies are scripted
    client._tool_audit = audit
    return client.run_tools("Book a viewing in Oslo", registry, confirm=None, actor="front-end", max_steps=4,
                            session_id="chat-1", tenant_id="immo", user_id="agent-7", defer_confirmation=True,
                            idempotency=log, **options)


def test_a_call_needing_confirmation_ends_the_turn_and_runs_once_when_confirmed(tmp_path: Path) -> None:
    registry, runs = booking_registry()
    log, audit = IdempotencyLog(), AuditLog(tmp_path / "tools.jsonl")
    geri = ScriptedGeri(gen("Checking.", (call("get_weather", "c1"), call("book_viewing", "c2"))))
    first = run(geri, registry, log, audit)
    assert first.stopped == "requires_confirmation" and first.requires_confirmation and runs == []
    (waiting,) = first.pending.calls
    assert (waiting.id, waiting.name, waiting.arguments) == ("c2", "book_viewing", {"city": "Oslo"})
    assert [c.outcome for c in first.calls] == ["ok", "requires_confirmation"]
    assert len(geri.requests) == 1  # the model was not asked again: the turn ended

    # The next request (possibly another process: the pending state survives JSON) confirms it.
    pending = PendingConfirmation.from_dict(json.loads(json.dumps(first.to_dict()["requires_confirmation"])))
    geri.replies = [gen("Booked your viewing in Oslo.")]
    second = run(geri, registry, log, audit, resume=pending, confirmed=("c2",))
    assert second.stopped == "answered" and second.text == "Booked your viewing in Oslo."
    assert runs == [{"city": "Oslo", "user_id": "agent-7", "tenant_id": "immo"}]  # the caller's, not the model's
    turns = geri.requests[-1][1]["messages"]  # both results go to the model, the weather one kept from turn 1
    assert [(t.role, t.tool_call_id) for t in turns] == [("tool", "c1"), ("tool", "c2")]
    assert json.loads(turns[1].content) == {"booked": "Oslo"}

    # The same confirmation sent again (a double click, a retried request): the tool does not run again.
    geri.replies = [gen("Booked.")]
    again = run(geri, registry, log, audit, resume=pending, confirmed=("c2",))
    assert runs == [{"city": "Oslo", "user_id": "agent-7", "tenant_id": "immo"}]
    assert again.calls[0].outcome == "repeated" and json.loads(again.calls[0].result) == {"booked": "Oslo"}
    events = list(read_audit_log(tmp_path / "tools.jsonl"))
    assert [(e["target"], e["outcome"]) for e in events] == [
        ("tool=get_weather", "ok"), ("tool=book_viewing", "requires_confirmation"),
        ("tool=book_viewing", "ok"), ("tool=book_viewing", "repeated")]
    assert {e["user"] for e in events} == {"agent-7"} and "Oslo" not in (tmp_path / "tools.jsonl").read_text()


def test_an_unconfirmed_or_altered_call_does_not_run() -> None:
    registry, runs = booking_registry()
    log = IdempotencyLog()
    first = run(ScriptedGeri(gen(calls=(call("book_viewing", "c9"),))), registry, log)
    declined = run(ScriptedGeri(gen("Not booked.")), registry, log, resume=first.pending, confirmed=())
    assert declined.calls[0].outcome == "declined" and runs == []
    altered = first.pending.to_dict()
    altered["calls"][0]["arguments"] = {"city": "Bergen"}  # arguments changed after the user saw them
    tampered = run(ScriptedGeri(gen("?")), registry, log, resume=PendingConfirmation.from_dict(altered),
                   confirmed=("c9",))
    assert tampered.calls[0].outcome == "invalid" and runs == []
    assert "idempotency key" in json.loads(tampered.calls[0].result)["error"]
    # Re-signing the altered call needs the log's secret: a key made with another secret is refused too.
    altered["calls"][0]["idempotency_key"] = IdempotencyLog(secret=b"guess").key(
        PendingConfirmation.from_dict(altered).calls[0].request(), "immo", "chat-1")
    forged = run(ScriptedGeri(gen("?")), registry, log, resume=PendingConfirmation.from_dict(altered),
                 confirmed=("c9",))
    assert forged.calls[0].outcome == "invalid" and runs == []
