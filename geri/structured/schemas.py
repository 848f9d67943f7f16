"""Check request-supplied JSON schemas and tool definitions before anything reaches a model."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from wolf.v1 import common_pb2

from geri.backends.base import ToolSpec
from wolf_service.errors import InvalidArgument

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TOOL_CHOICES = ("auto", "required", "none")
# A tool without a parameters schema takes an empty object.
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _depth(value: Any, limit: int, level: int = 1) -> int:
    """Nesting depth of a JSON value; stops counting past ``limit``."""
    if level > limit:
        return level
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((_depth(child, limit, level + 1) for child in children), default=level)


def load_schema(text: str, field: str, *, max_bytes: int, max_depth: int) -> dict[str, Any]:
    """Parse and check one JSON Schema given as JSON text.

    Raises:
        InvalidArgument: not JSON, not an object, over a limit, or not a valid JSON Schema (2020-12).
    """
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise InvalidArgument(f"{field} is {size:,} bytes; the limit is {max_bytes:,} (structured.max_schema_bytes)")
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise InvalidArgument(f"{field} is not valid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise InvalidArgument(f"{field} must be a JSON object (a JSON Schema), got {type(schema).__name__}")
    depth = _depth(schema, max_depth)
    if depth > max_depth:
        raise InvalidArgument(f"{field} nests deeper than {max_depth} levels (structured.max_schema_depth)")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise InvalidArgument(f"{field} is not a valid JSON Schema at {where}: {exc.message[:300]}") from None
    return schema


def load_tools(
    tools: Sequence[common_pb2.ToolDefinition], *, max_tools: int, max_bytes: int, max_depth: int
) -> tuple[ToolSpec, ...]:
    """Check ``generation.tools``: names unique and well-formed, parameter schemas valid object schemas."""
    if len(tools) > max_tools:
        raise InvalidArgument(
            f"generation.tools has {len(tools)} tools; the limit is {max_tools} (structured.max_tools)"
        )
    specs: list[ToolSpec] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        field = f"generation.tools[{i}]"
        if not TOOL_NAME.match(tool.name):
            raise InvalidArgument(f"{field}.name must match [A-Za-z0-9_-]{{1,64}} (got {tool.name[:80]!r})")
        if tool.name in seen:
            raise InvalidArgument(f"{field}.name {tool.name!r} is given twice")
        seen.add(tool.name)
        if len(tool.description) > 4096:
            raise InvalidArgument(f"{field}.description is {len(tool.description):,} characters; the limit is 4,096")
        params = NO_ARGUMENTS
        if tool.parameters_json_schema.strip():
            params = load_schema(tool.parameters_json_schema, f"{field}.parameters_json_schema",
                                 max_bytes=max_bytes, max_depth=max_depth)
            if params.get("type") != "object":
                raise InvalidArgument(f"{field}.parameters_json_schema must describe an object (\"type\": \"object\")")
        specs.append(ToolSpec(name=tool.name, description=tool.description, parameters=params))
    return tuple(specs)


def check_tool_choice(choice: str, tools: Sequence[ToolSpec]) -> str:
    """``generation.tool_choice``: "" means "auto"; "required" needs tools."""
    choice = choice.strip() or "auto"
    if choice not in TOOL_CHOICES:
        raise InvalidArgument(f"generation.tool_choice must be one of {', '.join(TOOL_CHOICES)} (got {choice[:40]!r})")
    if choice == "required" and not tools:
        raise InvalidArgument("generation.tool_choice is 'required' but generation.tools is empty")
    return choice
