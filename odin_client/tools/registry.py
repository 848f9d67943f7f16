"""The tools a caller offers the model, and the rules every call must pass before it runs.

A call runs only if: the tool is registered, its arguments validate against the tool's JSON schema,
the caller holds every scope the tool requires, and — for a tool marked ``confirm`` — the caller said
yes for this very call. Anything else is refused with a reason the model sees as the tool's result.
The loop (``loop.py``) records every decision in the audit log the client is given (who, tool,
outcome; never the arguments' values or the results).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from wolf.v1 import common_pb2

from odin_client.types.errors import InvalidRequest
from odin_client.types.results import ToolCallRequest

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_RESULT_CHARS = 8_000


@dataclass(frozen=True)
class Tool:
    """A tool: what it is called, what it does, its arguments' JSON schema, who may use it, how it runs."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[..., Any]
    scopes: frozenset[str] = field(default_factory=frozenset)
    confirm: bool = False


@dataclass(frozen=True)
class Decision:
    """Whether a call may run; ``outcome`` is ok, needs_confirmation, unknown, invalid or refused."""

    outcome: str
    reason: str = ""


class ToolRegistry:
    """Tools offered to one caller, who holds ``granted_scopes``."""

    def __init__(self, tools: Iterable[Tool] = (), *, granted_scopes: Iterable[str] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.granted = frozenset(granted_scopes)
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; its name and schema are checked now, not when the model first calls it."""
        if not _NAME.match(tool.name):
            raise InvalidRequest(f"tool name must match [A-Za-z0-9_-]{{1,64}} (got {tool.name[:80]!r})")
        if tool.name in self._tools:
            raise InvalidRequest(f"tool {tool.name!r} is registered twice")
        if tool.parameters.get("type") != "object":
            raise InvalidRequest(f"tool {tool.name!r}: parameters must be a JSON schema of an object")
        try:
            Draft202012Validator.check_schema(tool.parameters)
        except SchemaError as exc:
            raise InvalidRequest(f"tool {tool.name!r}: parameters are not a valid JSON schema: {exc.message}") from None
        self._tools[tool.name] = tool

    def definitions(self) -> list[common_pb2.ToolDefinition]:
        """The tools as Geri's request carries them."""
        return [common_pb2.ToolDefinition(name=t.name, description=t.description,
                                          parameters_json_schema=json.dumps(t.parameters))
                for t in self._tools.values()]

    def decide(self, call: ToolCallRequest) -> Decision:
        """Check a call against the rules (does not run it)."""
        tool = self._tools.get(call.name)
        if tool is None:
            return Decision("unknown", f"there is no tool {call.name[:64]!r}")
        if call.malformed:
            return Decision("invalid", "the arguments are not a JSON object")
        error = best_match(Draft202012Validator(tool.parameters).iter_errors(call.arguments))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            return Decision("invalid", f"arguments do not match the schema at {where}: {error.message[:200]}")
        missing = sorted(tool.scopes - self.granted)
        if missing:
            return Decision("refused", f"the caller lacks scope(s) {', '.join(missing)} needed by {tool.name}")
        return Decision("needs_confirmation" if tool.confirm else "ok")

    def tool(self, name: str) -> Tool:
        """A registered tool (KeyError when there is none)."""
        return self._tools[name]

    def __len__(self) -> int:
        return len(self._tools)


def as_text(result: Any) -> str:
    """A handler's return value as the tool turn's content, bounded."""
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_RESULT_CHARS else text[:_MAX_RESULT_CHARS] + "…(truncated)"
