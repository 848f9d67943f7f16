"""What a caller asks before retrieving: a standalone rewrite of a follow-up, and paraphrases of a query."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from wolf.v1 import common_pb2

from geri.answering.evidence import terms
from wolf_service.language_tags import normalize_language

REWRITE_SYSTEM = (
    "Rewrite the user's last question so that it can be understood without the conversation: replace "
    "pronouns and references with what they mean. Keep it short. Reply in JSON."
)
REWRITE_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["query"],
                                  "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 300}}}
REWRITE_MAX_TOKENS = 80
VARIANTS_SYSTEM = (
    "Give different phrasings of the search query that mean the same thing, using other words. Reply in JSON."
)
VARIANT_MAX_TOKENS = 40


class HasContent(Protocol):
    """A conversation turn: a stored session turn or a request's ChatTurn."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...


def variants_schema(count: int) -> dict[str, Any]:
    """Up to ``count`` paraphrases."""
    return {"type": "object", "additionalProperties": False, "required": ["variants"],
            "properties": {"variants": {"type": "array", "minItems": 1, "maxItems": count,
                                        "items": {"type": "string", "minLength": 3, "maxLength": 200}}}}


def history_turns(turns: Sequence[HasContent], keep: int) -> list[common_pb2.ChatTurn]:
    """The last ``keep`` question/answer turns with text (tool turns and tool-call-only turns left out)."""
    kept = [t for t in turns if t.role in ("user", "assistant") and t.content.strip()]
    return [common_pb2.ChatTurn(role=t.role, content=_readable(t.content)) for t in kept[-keep:]] if keep else []


def _readable(content: str) -> str:
    """A grounded answer stored as its JSON (by a client that called Generate): keep only its answer text."""
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


# A standalone rewrite only restates the conversation: nearly all of its words were said in it.
MIN_REWRITE_GROUNDING = 0.75


def grounded_rewrite(query: str, question: str, turns: Sequence[common_pb2.ChatTurn],
                     language: str = "en") -> tuple[str, str]:
    """``query`` when MIN_REWRITE_GROUNDING of its content terms (stemmed: "log" meets "logs") occur in the
    question or the conversation, else the question and a warning saying why: a small model sometimes
    answers with an invented URL or a guess. ``language`` is a caller's tag ("en-US", "EN", "eng" are English)."""
    language = normalize_language(language) or "en"
    words = terms(query, language)
    said = terms(" ".join([question, *(t.content for t in turns)]), language)
    share = len(words & said) / len(words) if words else 0.0
    if share >= MIN_REWRITE_GROUNDING:
        return query, ""
    return question, (f"the rewrite {query[:80]!r} was not used: {share:.0%} of its words occur in the conversation, "
                      f"below {MIN_REWRITE_GROUNDING:.0%}; the question was kept")


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
