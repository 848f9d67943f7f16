"""Odin's tool loop: the registry's rules, the bounded loop over Geri's replies, running handlers.

Most tests drive the loop with scripted Geri replies (a seam: what a model asks for is chosen by the
test); ``test_tools_end_to_end`` runs it against a real Geri with the embedded SmolLM2.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from odin_client import AsyncOdinClient, OdinClient, OdinSettings
from odin_client.tools import Tool, ToolRegistry
from odin_client.types.errors import InvalidRequest
from odin_client.types.results import Generation, ToolCallRequest

CITY = {"type": "object", "additionalProperties": False, "required": ["city"],
        "properties": {"city": {"type": "string", "maxLength": 40}}}


def gen(text: str = "", calls: tuple[ToolCallRequest, ...] = ()) -> Generation:
    return Generation(text=text, model="m", prompt_tokens=1, completion_tokens=1,
                      finish_reason="tool_calls" if calls else "stop", server_ms=1, elapsed_ms=1.0, attempts=1,
                      tool_calls=list(calls))


def call(name: str = "get_weather", call_id: str = "call_1", **arguments: Any) -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name=name, arguments=arguments or {"city": "Oslo"})


class ScriptedGeri:
    """``generate`` that answers from a script and keeps each request's options."""

    def __init__(self, *replies: Generation) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, prompt: str, **options: Any) -> Generation:
        self.requests.append((prompt, options))
        return self.replies.pop(0) if self.replies else gen("done")


def weather_registry(**tool: Any) -> tuple[ToolRegistry, list[dict[str, Any]]]:
    granted = tool.pop("granted", ())
    runs: list[dict[str, Any]] = []

    def handler(**arguments: Any) -> dict[str, Any]:
        runs.append(arguments)
        return {"sky": "sunny", "celsius": 21}

    spec: dict[str, Any] = {"name": "get_weather", "description": "Weather now", "parameters": CITY,
                            "handler": handler, **tool}
    return ToolRegistry([Tool(**spec)], granted_scopes=granted), runs


def run(geri: ScriptedGeri, registry: ToolRegistry, *, confirm: Callable[[ToolCallRequest], bool] | None = None,
        max_steps: int = 4, session_id: str = "", audit: Any = None, timeout_s: float = 5.0) -> Any:
    client = OdinClient(OdinSettings(tool_timeout_s=timeout_s))
    client.generate = geri  # type: ignore[method-assign]  # the seam: Geri's replies are scripted
    client._tool_audit = audit
    return client.run_tools("Weather in Oslo?", registry, confirm=confirm, actor="tester", max_steps=max_steps,
                            session_id=session_id)


def test_a_call_runs_and_its_result_goes_back_with_the_whole_conversation() -> None:
    registry, runs = weather_registry()
    geri = ScriptedGeri(gen(calls=(call(),)), gen("Sunny, 21 °C."))
    result = run(geri, registry)
    assert result.text == "Sunny, 21 °C." and result.stopped == "answered" and result.steps == 2
    assert runs == [{"city": "Oslo"}]
    (record,) = result.calls
    assert record.outcome == "ok" and json.loads(record.result) == {"sky": "sunny", "celsius": 21}
    first, second = geri.requests
    assert first[0] == "Weather in Oslo?" and first[1]["messages"] == [] and first[1]["tools"][0].name == "get_weather"
    assert second[0] == ""  # no new question: the conversation continues from the tool result
    roles = [t.role for t in second[1]["messages"]]
    assert roles == ["user", "assistant", "tool"]
    assert second[1]["messages"][1].tool_calls[0].id == "call_1"
    assert second[1]["messages"][2].tool_call_id == "call_1"


def test_with_a_session_only_the_new_turns_are_sent() -> None:
    registry, _ = weather_registry()
    geri = ScriptedGeri(gen(calls=(call(),)), gen("Sunny."))
    run(geri, registry, session_id="s-1")
    _, second = geri.requests
    assert [t.role for t in second[1]["messages"]] == ["tool"] and second[1]["session_id"] == "s-1"


@pytest.mark.parametrize(("registry_kwargs", "the_call", "outcome", "says"), [
    ({}, call("delete_everything"), "unknown", "there is no tool"),
    ({}, call(city=42), "invalid", "arguments do not match the schema at city"),
    ({}, call(city="Oslo", extra=1), "invalid", "Additional properties"),
    ({"scopes": frozenset({"weather:read"})}, call(), "refused", "lacks scope(s) weather:read"),
    ({"confirm": True}, call(), "declined", "did not allow"),
])
def test_a_call_that_breaks_a_rule_does_not_run_and_the_model_is_told_why(
        registry_kwargs: dict[str, Any], the_call: ToolCallRequest, outcome: str, says: str) -> None:
    registry, runs = weather_registry(**registry_kwargs)
    geri = ScriptedGeri(gen(calls=(the_call,)), gen("Sorry."))
    result = run(geri, registry)
    assert runs == [] and result.calls[0].outcome == outcome
    assert says in json.loads(result.calls[0].result)["error"]
    assert says in geri.requests[1][1]["messages"][-1].content


def test_scopes_granted_and_confirmation_given_let_the_call_run() -> None:
    registry, runs = weather_registry(scopes=frozenset({"weather:read"}), confirm=True, granted={"weather:read"})
    asked: list[str] = []
    result = run(ScriptedGeri(gen(calls=(call(),)), gen("ok")), registry,
                 confirm=lambda c: asked.append(c.name) or True)
    assert asked == ["get_weather"] and runs == [{"city": "Oslo"}] and result.calls[0].outcome == "ok"


def test_the_loop_is_bounded_and_the_last_turn_must_answer() -> None:
    registry, runs = weather_registry()
    replies = [gen(calls=(call(call_id=f"call_{i}", city=f"City {i}"),)) for i in range(10)]
    geri = ScriptedGeri(*replies)
    result = run(geri, registry, max_steps=3)
    assert result.stopped == "max_steps" and result.steps == 4 and len(runs) == 3
    assert [o["tool_choice"] for _, o in geri.requests] == ["auto", "auto", "auto", "none"]


def test_the_same_call_again_gets_the_earlier_result_without_running_twice() -> None:
    registry, runs = weather_registry()
    geri = ScriptedGeri(gen(calls=(call(),)), gen(calls=(call(call_id="call_2"),)), gen("Sunny."))
    result = run(geri, registry)
    assert len(runs) == 1 and [r.outcome for r in result.calls] == ["ok", "repeated"]
    assert result.calls[1].result == result.calls[0].result


def test_a_failing_or_slow_handler_becomes_an_error_result_without_its_message() -> None:
    def broken(city: str) -> str:
        raise RuntimeError("password=hunter2")

    release = threading.Event()

    def slow(city: str) -> str:
        release.wait(5)
        return "late"

    registry = ToolRegistry([Tool("broken", "", CITY, broken), Tool("slow", "", CITY, slow)])
    geri = ScriptedGeri(gen(calls=(call("broken"), call("slow", "call_2"))), gen("Could not find out."))
    start = time.monotonic()
    result = run(geri, registry, timeout_s=0.3)
    release.set()
    assert time.monotonic() - start < 3
    assert [r.outcome for r in result.calls] == ["error", "unfinished"]
    assert "RuntimeError" in result.calls[0].result and "hunter2" not in result.calls[0].result
    assert "0.3 s" in result.calls[1].result and "may yet complete" in result.calls[1].result


def test_a_tool_that_ran_past_its_time_limit_is_reported_as_having_run() -> None:
    """Issue 32: a destructive tool finished just after its limit and the loop said "timeout" (it did nothing)."""
    deleted: list[str] = []

    def delete_all(city: str) -> str:
        time.sleep(0.6)  # past the 0.2 s limit, then the deletion happens
        deleted.append(city)
        return "deleted 3 documents"

    class SlowGeri(ScriptedGeri):
        def __call__(self, prompt: str, **options: Any) -> Generation:
            if len(self.requests) == 1:
                time.sleep(1.5)  # the model's next turn outlasts the tool
            return super().__call__(prompt, **options)

    registry = ToolRegistry([Tool("delete_all", "", CITY, delete_all)])
    audited: list[str] = []

    class Audit:
        def record(self, **fields: Any) -> None:
            audited.append(str(fields["outcome"]))

    geri = SlowGeri(gen(calls=(call("delete_all"),)), gen("It may not have finished."))
    result = run(geri, registry, timeout_s=0.2, audit=Audit())
    assert deleted == ["Oslo"]
    # The model was told the tool may still take effect; the caller learns that it ran and what it returned.
    assert "may yet complete" in geri.requests[1][1]["messages"][-1].content
    (record,) = result.calls
    assert record.outcome == "late" and record.result == "deleted 3 documents"
    assert audited == ["unfinished", "late"]


def test_every_decision_is_audited_without_argument_values(tmp_path: Path) -> None:
    from wolf_service.audit_log import AuditLog

    registry, _ = weather_registry(scopes=frozenset({"admin"}))
    run(ScriptedGeri(gen(calls=(call(),)), gen("no")), registry, audit=AuditLog(tmp_path / "audit.jsonl"))
    (event,) = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert event["action"] == "odin.tool_call" and event["outcome"] == "refused" and event["actor"] == "tester"
    assert event["arguments"] == "city" and "Oslo" not in json.dumps(event)


@pytest.mark.parametrize(("tool", "says"), [
    (Tool("bad name", "", CITY, print), "must match"),
    (Tool("t", "", {"type": "string"}, print), "schema of an object"),
    (Tool("t", "", {"type": "object", "properties": {"x": {"type": 12}}}, print), "not a valid JSON schema"),
])
def test_a_bad_tool_is_refused_when_registered(tool: Tool, says: str) -> None:
    with pytest.raises(InvalidRequest, match=says):
        ToolRegistry([tool])


def test_a_long_result_is_cut_before_it_reaches_the_model() -> None:
    registry = ToolRegistry([Tool("dump", "", CITY, lambda city: "x" * 50_000)])
    result = run(ScriptedGeri(gen(calls=(call("dump"),)), gen("ok")), registry)
    assert len(result.calls[0].result) < 9_000 and result.calls[0].result.endswith("(truncated)")


def test_async_client_runs_coroutine_handlers_and_async_confirmation(geri: Any, make_client: Any) -> None:
    servicer, handle = geri
    servicer.tool_script = [[("call_1", "get_weather", {"city": "Oslo"})]]
    seen: list[str] = []

    async def handler(city: str) -> dict[str, str]:
        seen.append(city)
        return {"sky": "sunny"}

    async def confirm(c: ToolCallRequest) -> bool:
        return True

    async def main() -> Any:
        registry = ToolRegistry([Tool("get_weather", "Weather", CITY, handler, confirm=True)])
        async with AsyncOdinClient(OdinSettings(geri_target=handle.address)) as client:
            return await client.run_tools("Weather in Oslo?", registry, confirm=confirm)

    result = asyncio.run(main())
    assert seen == ["Oslo"] and result.calls[0].outcome == "ok" and result.stopped == "answered"
    last = servicer.rec.calls[-1].request
    assert [t.role for t in last.generation.messages] == ["user", "assistant", "tool"]


def test_blocking_client_over_grpc(geri: Any, make_client: Any) -> None:
    servicer, handle = geri
    servicer.tool_script = [[("call_1", "get_weather", {"city": "Oslo"}), ("call_2", "get_weather", {"city": 7})]]
    registry, runs = weather_registry()
    client: OdinClient = make_client(geri_target=handle.address)
    result = client.run_tools("Weather in Oslo?", registry)
    assert runs == [{"city": "Oslo"}] and [r.outcome for r in result.calls] == ["ok", "invalid"]
    assert result.to_dict()["calls"][1]["outcome"] == "invalid"
