"""The output contract of one request: free text, JSON valid against a schema, and/or tool calls.

Backends that take native tool definitions (Ollama, OpenAI-compatible servers) get the tools as
such and report tool calls themselves. The embedded model gets one JSON schema that admits
``{"type": "final", "answer": ...}`` or ``{"type": "tool", "name": ..., "arguments": {...}}`` per
tool (the ImmoNow reply format), with each tool's arguments schema inlined, so constrained decoding
cannot produce an unknown tool or bad arguments. Whatever the backend, :meth:`OutputContract.parse`
checks the reply again: a violation names what is wrong, for one repair attempt and then an error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from geri.backends.base import ToolCall, ToolSpec, new_call_id

_MAX_REASON = 300


class ContractViolation(Exception):
    """The model's reply breaks the contract; the message says how (for the repair prompt and the error)."""


@dataclass(frozen=True)
class Reply:
    """A reply that satisfies the contract."""

    text: str
    json: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


def _violation_of(schema: dict[str, Any], value: Any) -> str | None:
    error = best_match(Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"at {where}: {error.message[:_MAX_REASON]}"


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, else inside a ``` fence, else from the first { to the last }.

    Raises:
        ContractViolation: there is no parsable JSON.
    """
    candidates = [text.strip()]
    if "```" in text:
        inner = text.split("```", 2)[1]
        candidates.append(inner.removeprefix("json").strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    flat = text.strip()
    ends = f" and ends with {flat[-60:]!r}" if len(flat) > 80 else ""
    raise ContractViolation(f"the reply is not JSON ({len(flat):,} characters; it starts with {flat[:80]!r}{ends})")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class OutputContract:
    """What the answer to one request must be."""

    schema: dict[str, Any] | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    _by_name: dict[str, ToolSpec] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({t.name: t for t in self.tools})

    @property
    def offers_tools(self) -> bool:
        """Whether the model may call tools at all."""
        return bool(self.tools) and self.tool_choice != "none"

    @property
    def constrained(self) -> bool:
        """Whether the reply is checked (and therefore not streamed as it is produced)."""
        return self.schema is not None or self.offers_tools

    def decoding_schema(self, native_tools: bool) -> dict[str, Any] | None:
        """The schema a backend decodes against: the client's, or the final/tool union for schema-tools."""
        if not self.offers_tools or native_tools:
            return self.schema
        variants = [
            {"type": "object", "additionalProperties": False, "required": ["type", "name", "arguments"],
             "properties": {"type": {"const": "tool"}, "name": {"const": t.name}, "arguments": t.parameters}}
            for t in self.tools
        ]
        if self.tool_choice != "required":
            answer = self.schema if self.schema is not None else {"type": "string"}
            variants.insert(0, {"type": "object", "additionalProperties": False, "required": ["type", "answer"],
                                "properties": {"type": {"const": "final"}, "answer": answer}})
        return variants[0] if len(variants) == 1 else {"anyOf": variants}

    def parse(self, text: str, native_calls: Sequence[ToolCall], *, native_tools: bool) -> Reply:
        """Check a reply; return what it says.

        Raises:
            ContractViolation: the reply breaks the contract (message for the repair prompt).
        """
        if self.offers_tools and not native_tools:
            return self._parse_union(text)
        calls = tuple(self._checked_call(c) for c in native_calls) if native_calls else ()
        if calls and not self.offers_tools:
            raise ContractViolation("the reply calls tools, but no tools are offered: answer directly")
        if self.tool_choice == "required" and not calls:
            raise ContractViolation("the reply must call one of the tools: " + ", ".join(self._by_name))
        if calls:
            return Reply(text="", tool_calls=calls)
        return self._answer(extract_json(text) if self.schema is not None else text)

    def _parse_union(self, text: str) -> Reply:
        value = extract_json(text)
        if not isinstance(value, dict) or value.get("type") not in ("final", "tool"):
            raise ContractViolation('the reply must be a JSON object with "type": "final" or "type": "tool"')
        if value["type"] == "tool":
            if self.tool_choice == "none":
                raise ContractViolation("the reply calls a tool, but tools may not be used now")
            name, arguments = str(value.get("name", "")), value.get("arguments", {})
            if not isinstance(arguments, dict):
                raise ContractViolation(f"the arguments of tool {name[:64]!r} must be a JSON object")
            call = ToolCall(id=new_call_id(), name=name, arguments=arguments)
            return Reply(text="", tool_calls=(self._checked_call(call),))
        if self.tool_choice == "required":
            raise ContractViolation("the reply must call one of the tools: " + ", ".join(self._by_name))
        if "answer" not in value:
            raise ContractViolation('a "final" reply needs an "answer"')
        return self._answer(value["answer"])

    def _answer(self, answer: Any) -> Reply:
        if self.schema is None:
            return Reply(text=answer if isinstance(answer, str) else _compact(answer))
        problem = _violation_of(self.schema, answer)
        if problem:
            raise ContractViolation(f"the answer does not match the JSON schema {problem}")
        text = _compact(answer)
        return Reply(text=text, json=text)

    def _checked_call(self, call: ToolCall) -> ToolCall:
        spec = self._by_name.get(call.name)
        if spec is None:
            known = ", ".join(self._by_name) or "none"
            raise ContractViolation(f"the reply calls unknown tool {call.name[:64]!r} (tools: {known})")
        problem = _violation_of(spec.parameters, call.arguments)
        if problem:
            raise ContractViolation(f"the arguments of tool {call.name!r} do not match its schema {problem}")
        return call if call.id else ToolCall(id=new_call_id(), name=call.name, arguments=call.arguments)

    def repair_instruction(self, violation: ContractViolation, *, native_tools: bool) -> str:
        """The user turn that asks the model to try again, saying what was wrong."""
        wanted = "a JSON value"
        schema = self.decoding_schema(native_tools)
        if schema is not None:
            wanted = f"JSON matching this schema: {_compact(schema)}"
        elif self.offers_tools:
            wanted = "an answer, or a call of one of the tools: " + ", ".join(self._by_name)
        return f"Your previous reply was not valid: {violation}. Reply again with only {wanted}."
