"""What Odin asks Geri before retrieving: a standalone rewrite of a follow-up, and paraphrases of a query."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from wolf.v1 import common_pb2

REWRITE_SYSTEM = (
    "Rewrite the user's last question so that it can be understood without the conversation: replace "
    "pronouns and references with what they mean. Keep it short. Reply in JSON."
)
REWRITE_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["query"],
                                  "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 300}}}
VARIANTS_SYSTEM = (
    "Give different phrasings of the search query that mean the same thing, using other words. Reply in JSON."
)


def variants_schema(count: int) -> dict[str, Any]:
    """Up to ``count`` paraphrases."""
    return {"type": "object", "additionalProperties": False, "required": ["variants"],
            "properties": {"variants": {"type": "array", "minItems": 1, "maxItems": count,
                                        "items": {"type": "string", "minLength": 3, "maxLength": 200}}}}


def history_turns(session: Any, keep: int = 6) -> list[common_pb2.ChatTurn]:
    """The last ``keep`` question/answer turns of a Geri ``Session`` (tool turns left out)."""
    turns = [t for t in session.turns if t.role in ("user", "assistant") and t.content]
    return [common_pb2.ChatTurn(role=t.role, content=_readable(t.content)) for t in turns[-keep:]]


def _readable(content: str) -> str:
    """A grounded answer is stored as its JSON: keep only its answer text for the rewrite prompt."""
    if content.startswith("{"):
        try:
            data = json.loads(content)
        except ValueError:
            return content
        if isinstance(data, dict) and "answer" in data:
            return str(data.get("answer") or data.get("reason") or "")
    return content


def parse_rewrite(json_text: str, fallback: str) -> str:
    """The rewritten query, or ``fallback`` when the reply carries none."""
    try:
        query = str(json.loads(json_text).get("query", "")).strip()
    except (ValueError, AttributeError):
        return fallback
    return query or fallback


def parse_variants(json_text: str, original: str, count: int) -> list[str]:
    """Distinct paraphrases, without the original, at most ``count``."""
    try:
        items: Sequence[Any] = json.loads(json_text).get("variants", [])
    except (ValueError, AttributeError):
        return []
    seen = {original.strip().lower()}
    out: list[str] = []
    for item in items:
        text = str(item).strip()
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out[:count]
