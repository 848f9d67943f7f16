"""Schema and tool checks, and the output contract's verdict on replies (no model needed)."""

from __future__ import annotations

import json

import pytest
from wolf.v1 import common_pb2

from geri.backends.base import ToolCall, ToolSpec
from geri.structured.contract import ContractViolation, OutputContract, extract_json
from geri.structured.schemas import NO_ARGUMENTS, check_tool_choice, load_schema, load_tools
from wolf_service.errors import InvalidArgument

ANSWER = {"type": "object", "required": ["summary", "confidence"], "additionalProperties": False,
          "properties": {"summary": {"type": "string"}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
WEATHER = ToolSpec("weather", "Weather in a city", {"type": "object", "required": ["city"],
                                                    "properties": {"city": {"type": "string"}},
                                                    "additionalProperties": False})


def limits() -> dict[str, int]:
    return {"max_bytes": 4096, "max_depth": 8}


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"type": "strin"}', "not a valid JSON Schema"),
    ('{"properties": {"a": {"minimum": "zero"}}}', "not a valid JSON Schema at properties/a/minimum"),
    (json.dumps({"description": "x" * 5000}), "the limit is 4,096"),
    ("{" + '"a": {' * 12 + "}" * 12 + "}", "nests deeper than 8"),
])
def test_bad_schemas_are_invalid_argument_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        load_schema(text, "generation.json_schema", **limits())


def test_tools_are_checked_and_parameterless_tools_take_an_empty_object() -> None:
    tool = common_pb2.ToolDefinition
    specs = load_tools([tool(name="now"), tool(name="weather", parameters_json_schema=json.dumps(WEATHER.parameters))],
                       max_tools=4, **limits())
    assert specs[0].parameters == NO_ARGUMENTS and specs[1].parameters == WEATHER.parameters
    for tools, message in [
        ([tool(name="a b")], "must match"),
        ([tool(name="a"), tool(name="a")], "given twice"),
        ([tool(name="a", parameters_json_schema='{"type": "string"}')], "must describe an object"),
        ([tool(name=f"t{i}") for i in range(5)], "the limit is 4"),
    ]:
        with pytest.raises(InvalidArgument, match=message):
            load_tools(tools, max_tools=4, **limits())
    with pytest.raises(InvalidArgument, match="tool_choice is 'required' but generation.tools is empty"):
        check_tool_choice("required", [])
    assert check_tool_choice("", specs) == "auto"


def test_a_schema_reply_is_validated_and_returned_compact() -> None:
    contract = OutputContract(schema=ANSWER)
    reply = contract.parse('Sure! ```json\n{"summary": "ok", "confidence": 0.5}\n```', [], native_tools=False)
    assert reply.json == reply.text == '{"summary":"ok","confidence":0.5}'
    with pytest.raises(ContractViolation, match="at confidence: 2 is greater than the maximum of 1"):
        contract.parse('{"summary": "ok", "confidence": 2}', [], native_tools=False)
    with pytest.raises(ContractViolation, match="not JSON"):
        contract.parse("I cannot answer that.", [], native_tools=False)


def test_the_union_schema_admits_an_answer_or_a_known_tool_with_valid_arguments() -> None:
    contract = OutputContract(schema=ANSWER, tools=(WEATHER,))
    schema = contract.decoding_schema(native_tools=False)
    assert schema is not None and len(schema["anyOf"]) == 2
    assert contract.decoding_schema(native_tools=True) == ANSWER
    final = contract.parse('{"type": "final", "answer": {"summary": "s", "confidence": 1}}', [], native_tools=False)
    assert final.json == '{"summary":"s","confidence":1}' and not final.tool_calls
    call = contract.parse('{"type":"tool","name":"weather","arguments":{"city":"Oslo"}}', [], native_tools=False)
    assert call.tool_calls[0].name == "weather" and call.tool_calls[0].arguments == {"city": "Oslo"}
    assert call.tool_calls[0].id.startswith("call_")
    with pytest.raises(ContractViolation, match="unknown tool 'rm_rf'"):
        contract.parse('{"type":"tool","name":"rm_rf","arguments":{}}', [], native_tools=False)
    with pytest.raises(ContractViolation, match="do not match its schema at city"):
        contract.parse('{"type":"tool","name":"weather","arguments":{"city":7}}', [], native_tools=False)


def test_native_tool_calls_are_checked_like_schema_ones() -> None:
    contract = OutputContract(tools=(WEATHER,), tool_choice="required")
    ok = contract.parse("", [ToolCall("c1", "weather", {"city": "Rome"})], native_tools=True)
    assert ok.tool_calls == (ToolCall("c1", "weather", {"city": "Rome"}),)
    with pytest.raises(ContractViolation, match="must call one of the tools"):
        contract.parse("It is sunny.", [], native_tools=True)
    with pytest.raises(ContractViolation, match="unknown tool"):
        contract.parse("", [ToolCall("c2", "delete_everything", {})], native_tools=True)
    assert "weather" in contract.repair_instruction(ContractViolation("x"), native_tools=True)


def test_tool_choice_none_offers_no_tools() -> None:
    contract = OutputContract(tools=(WEATHER,), tool_choice="none")
    assert not contract.offers_tools and not contract.constrained
    assert contract.decoding_schema(native_tools=False) is None


def test_extract_json_prefers_the_whole_text() -> None:
    assert extract_json('{"a": "}"}') == {"a": "}"}
    assert extract_json('noise {"a": 1} noise') == {"a": 1}


def test_the_grammar_mask_is_applied_without_torch_compile() -> None:
    """Bit t % 32 of word t // 32 allows token t; tokens past the mask are forbidden (no C++ compiler needed)."""
    import torch

    from geri.backends.constrained import apply_bitmask

    mask = torch.zeros(1, 2, dtype=torch.int32)
    mask[0, 0] = (1 << 3) | -(1 << 31)  # tokens 3 and 31 (bit 31 set: a negative int32)
    mask[0, 1] = 1 << 1  # token 33
    scores = torch.zeros(1, 70)
    apply_bitmask(scores, mask)
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == [3, 31, 33]
