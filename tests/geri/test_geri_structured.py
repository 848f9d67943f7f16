"""Integration: structured output and tool calls with the real embedded SmolLM2, decoding constrained by
llguidance, through a real gRPC server."""

from __future__ import annotations

import json

import grpc
import jsonschema
import pytest
from wolf.v1 import common_pb2, geri_pb2_grpc

pytestmark = pytest.mark.integration

DOC = common_pb2.RetrievedDocument(document_id="relay-doc",
                                   content="The Hrafn relay admin API listens on TCP port 9427.",
                                   relevance_score=0.9)
ANSWER = {"type": "object", "additionalProperties": False, "required": ["answer", "cited", "confidence"],
          "properties": {"answer": {"type": "string", "maxLength": 120},
                         "cited": {"type": "array", "maxItems": 2, "items": {"enum": ["relay-doc"]}},
                         "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
WEATHER = common_pb2.ToolDefinition(
    name="get_weather", description="Current weather for a city",
    parameters_json_schema=json.dumps({"type": "object", "additionalProperties": False, "required": ["city"],
                                       "properties": {"city": {"type": "string", "maxLength": 40}}}))


def ask(prompt: str, *, max_tokens: int = 60, docs: tuple[common_pb2.RetrievedDocument, ...] = (),
        **generation: object) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id="st-1", model_type=common_pb2.LLM, prompt=prompt, context=common_pb2.RAGContext(documents=docs),
        metadata=common_pb2.RequestMetadata(max_tokens=max_tokens, temperature=0.0),
        generation=common_pb2.GenerationOptions(**generation),  # type: ignore[arg-type]
    )


def test_the_answer_validates_against_the_schema_on_the_first_try(geri_stub: geri_pb2_grpc.GeriServiceStub) -> None:
    llm = geri_stub.Generate(ask("Which port does the relay admin API use?", docs=(DOC,),
                                 json_schema=json.dumps(ANSWER)), timeout=600).llm_response
    jsonschema.validate(json.loads(llm.json), ANSWER)
    assert llm.text == llm.json and llm.repair_attempts == 0 and llm.backend == "embedded"
    assert " " not in llm.json.split('"answer"')[0]  # compact: no tokens spent on indentation


def test_a_required_tool_is_called_with_arguments_valid_for_its_schema(
        geri_stub: geri_pb2_grpc.GeriServiceStub) -> None:
    llm = geri_stub.Generate(ask("What is the weather in Oslo?", tools=[WEATHER], tool_choice="required"),
                             timeout=600).llm_response
    assert llm.finish_reason == "tool_calls" and llm.text == ""
    (call,) = llm.tool_calls
    assert call.name == "get_weather" and call.id.startswith("call_")
    assert set(json.loads(call.arguments_json)) == {"city"}


def test_the_tool_loop_continues_from_a_tool_result(geri_stub: geri_pb2_grpc.GeriServiceStub) -> None:
    """What Odin's tool loop sends after running a tool: the call and its result, no new question."""
    call = common_pb2.ToolCall(id="call_1", name="get_weather", arguments_json='{"city": "Oslo"}')
    turns = [common_pb2.ChatTurn(role="user", content="What is the weather in Oslo?"),
             common_pb2.ChatTurn(role="assistant", tool_calls=[call]),
             common_pb2.ChatTurn(role="tool", tool_call_id="call_1", content='{"sky": "sunny", "celsius": 21}')]
    llm = geri_stub.Generate(ask("", max_tokens=30, tools=[WEATHER], messages=turns), timeout=600).llm_response
    assert llm.finish_reason in ("stop", "length", "tool_calls")
    assert llm.text or llm.tool_calls  # an answer, or (tiny model) another valid call — never garbage
    for again in llm.tool_calls:
        assert again.name == "get_weather"


def test_structured_streams_only_the_checked_final_event(geri_stub: geri_pb2_grpc.GeriServiceStub) -> None:
    events = list(geri_stub.GenerateStream(ask("Which port?", docs=(DOC,), max_tokens=60,
                                              json_schema=json.dumps(ANSWER)), timeout=600))
    assert [e.WhichOneof("event") for e in events] == ["final"]
    jsonschema.validate(json.loads(events[0].final.llm_response.json), ANSWER)


def test_a_schema_too_deep_for_the_limit_is_refused_before_the_model_runs(
        geri_stub: geri_pb2_grpc.GeriServiceStub) -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(30):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(grpc.RpcError) as info:
        geri_stub.Generate(ask("hi", json_schema=json.dumps(deep)), timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "structured.max_schema_depth" in info.value.details()
