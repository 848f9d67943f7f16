"""Check a ``WolfRequest`` for Geri and turn it into validated generation inputs.

Every rejection is an ``InvalidArgument`` whose message names the offending field, so a
client can fix the request without reading server logs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from wolf.v1 import common_pb2

from geri.backends.base import ChatMessage, GenerationParams, ToolCall
from geri.context_metadata import metadata_line, shown_metadata
from geri.prompting import ContextDocument
from geri.settings import GeriSettings
from geri.structured.contract import OutputContract
from geri.structured.schemas import check_tool_choice, load_schema, load_tools
from wolf_service.errors import InvalidArgument
from wolf_service.identifiers import MAX_REQUEST_ID_CHARS

MAX_PROMPT_CHARS = 1_000_000
MAX_STOP_SEQUENCES = 16
MAX_ID_CHARS = 128
ROLES = ("user", "assistant", "tool")
# A BCP-47 tag's shape (primary subtag, then subtags of 1-8 letters or digits; "_" as some tools write it), at
# most 35 characters (RFC 5646's practical limit). It is written into the system prompt, so anything else
# would be an instruction a caller slipped in there.
MAX_LANGUAGE_CHARS = 35
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,8}(?:[-_][A-Za-z0-9]{1,8})*")


@dataclass(frozen=True)
class ValidatedRequest:
    """What a generation needs, taken from a request that passed validation."""

    request_id: str
    prompt: str
    documents: list[ContextDocument]
    params: GenerationParams
    model: str
    system_prompt: str
    language: str
    contract: OutputContract = OutputContract()
    messages: tuple[ChatMessage, ...] = ()
    tenant: str = "default"
    session_id: str = ""
    owner_id: str = ""
    # The caller's validated ``x-wolf-user`` ("" without one): whose session ``session_id`` names.
    user_id: str = ""


def require_request_id(request_id: str) -> None:
    """A request id is required, and at most MAX_REQUEST_ID_CHARS characters.

    Raises:
        InvalidArgument: naming the field and the limit.
    """
    if not request_id.strip():
        raise InvalidArgument("request_id must be non-empty")
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        raise InvalidArgument(f"request_id must be at most {MAX_REQUEST_ID_CHARS} characters (got {len(request_id):,})")


def validate_request(request: common_pb2.WolfRequest, settings: GeriSettings) -> ValidatedRequest:
    """Validate ``request`` and fill unset options from ``settings``.

    Raises:
        InvalidArgument: naming the first field that is wrong.
    """
    require_request_id(request.request_id)
    if request.model_type != common_pb2.LLM:
        got = model_type_name(request.model_type)
        raise InvalidArgument(f"model_type must be LLM for Geri (got {got})")
    if not request.prompt.strip() and not request.generation.messages:
        raise InvalidArgument("prompt must be non-empty (or generation.messages must continue a conversation)")
    if len(request.prompt) > MAX_PROMPT_CHARS:
        raise InvalidArgument(
            f"prompt is {len(request.prompt):,} characters; the limit is {MAX_PROMPT_CHARS:,}"
        )

    meta = request.metadata
    max_tokens = settings.default_max_tokens
    if meta.HasField("max_tokens"):
        max_tokens = meta.max_tokens
        if max_tokens <= 0:
            raise InvalidArgument(f"metadata.max_tokens must be positive (got {max_tokens})")
        if max_tokens > settings.max_tokens_limit:
            raise InvalidArgument(
                f"metadata.max_tokens is {max_tokens}; the limit is {settings.max_tokens_limit} (setting "
                "max_tokens_limit)"
            )
    temperature = settings.default_temperature
    if meta.HasField("temperature"):
        temperature = meta.temperature
        if not math.isfinite(temperature) or not 0.0 <= temperature <= 2.0:
            raise InvalidArgument(f"metadata.temperature must be in [0, 2] (got {temperature})")

    gen = request.generation
    top_p: float | None = None
    if gen.HasField("top_p"):
        top_p = gen.top_p
        if not math.isfinite(top_p) or not 0.0 < top_p <= 1.0:
            raise InvalidArgument(f"generation.top_p must be in (0, 1] (got {top_p})")
    if len(gen.stop) > MAX_STOP_SEQUENCES:
        raise InvalidArgument(
            f"generation.stop has {len(gen.stop)} entries; the limit is {MAX_STOP_SEQUENCES}"
        )
    for i, stop in enumerate(gen.stop):
        if not stop:
            raise InvalidArgument(f"generation.stop[{i}] must be non-empty")
    seed = gen.seed if gen.HasField("seed") else None

    documents: list[ContextDocument] = []
    for i, doc in enumerate(request.context.documents):
        if not doc.document_id.strip():
            raise InvalidArgument(f"context.documents[{i}].document_id must be non-empty")
        if not math.isfinite(doc.relevance_score):
            raise InvalidArgument(f"context.documents[{i}].relevance_score must be a finite number")
        documents.append(
            ContextDocument(
                document_id=doc.document_id,
                content=doc.content,
                score=doc.relevance_score,
                source=doc.source,
                metadata_line=metadata_line(shown_metadata(doc.metadata, settings.context_metadata),
                                            settings.context_metadata.max_chars),
            )
        )

    limits = settings.structured
    schema = None
    if gen.json_schema.strip():
        schema = load_schema(gen.json_schema, "generation.json_schema", max_bytes=limits.max_schema_bytes,
                             max_depth=limits.max_schema_depth)
    tools = load_tools(gen.tools, max_tools=limits.max_tools, max_bytes=limits.max_schema_bytes,
                       max_depth=limits.max_schema_depth)
    contract = OutputContract(schema=schema, tools=tools, tool_choice=check_tool_choice(gen.tool_choice, tools))

    tenant = _identifier(request.tenant_id, "tenant_id") or "default"
    return ValidatedRequest(
        request_id=request.request_id,
        prompt=request.prompt,
        documents=documents,
        params=GenerationParams(
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            stop=tuple(gen.stop),
            cache_scope=tenant,
        ),
        model=gen.model.strip(),
        system_prompt=gen.system_prompt if gen.system_prompt.strip() else settings.system_prompt,
        language=_language(meta.language),
        contract=contract,
        messages=_messages(gen.messages, limits.max_messages),
        tenant=tenant,
        session_id=_identifier(meta.session_id, "metadata.session_id"),
        owner_id=_identifier(meta.owner_id, "metadata.owner_id"),
    )


def model_type_name(value: int) -> str:
    """The enum name of a ``model_type``, or its number when this proto names none (a newer or hostile caller)."""
    return common_pb2.ModelType.Name(value) if value in common_pb2.ModelType.values() else str(value)


def _language(value: str) -> str:
    """``metadata.language`` stripped: empty, or a tag of BCP-47's shape ("en", "de-DE", "zh-Hant-TW")."""
    tag = value.strip()
    if tag and (len(tag) > MAX_LANGUAGE_CHARS or not _LANGUAGE_TAG.fullmatch(tag)):
        raise InvalidArgument(f"metadata.language must be a BCP-47 language tag such as 'en' or 'de-DE', at most "
                              f"{MAX_LANGUAGE_CHARS} characters (got {tag[:40]!r}{'…' if len(tag) > 40 else ''})")
    return tag


def _identifier(value: str, field: str) -> str:
    """A printable id of at most ``MAX_ID_CHARS`` characters ("" allowed)."""
    if len(value) > MAX_ID_CHARS:
        raise InvalidArgument(f"{field} is {len(value):,} characters; the limit is {MAX_ID_CHARS}")
    if not value.isprintable():
        raise InvalidArgument(f"{field} must be printable (control characters are refused)")
    return value


def _messages(turns: Sequence[common_pb2.ChatTurn], limit: int) -> tuple[ChatMessage, ...]:
    """``generation.messages`` as chat messages; roles, tool calls and tool results checked."""
    if len(turns) > limit:
        raise InvalidArgument(f"generation.messages has {len(turns)} turns; the limit is {limit} "
                              "(structured.max_messages)")
    out: list[ChatMessage] = []
    for i, turn in enumerate(turns):
        field = f"generation.messages[{i}]"
        if turn.role not in ROLES:
            raise InvalidArgument(f"{field}.role must be one of {', '.join(ROLES)} (got {turn.role[:20]!r})")
        if len(turn.content) > MAX_PROMPT_CHARS:
            raise InvalidArgument(f"{field}.content is {len(turn.content):,} characters; the limit is "
                                  f"{MAX_PROMPT_CHARS:,}")
        if turn.role == "tool" and not turn.tool_call_id:
            raise InvalidArgument(f"{field}.tool_call_id must name the call this tool result answers")
        if turn.tool_calls and turn.role != "assistant":
            raise InvalidArgument(f"{field}: only assistant turns carry tool_calls")
        calls = []
        for j, call in enumerate(turn.tool_calls):
            try:
                arguments = json.loads(call.arguments_json or "{}")
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                raise InvalidArgument(f"{field}.tool_calls[{j}].arguments_json must be a JSON object")
            calls.append(ToolCall(id=call.id, name=call.name, arguments=arguments))
        out.append(ChatMessage(turn.role, turn.content, tuple(calls), turn.tool_call_id))  # type: ignore[arg-type]
    return tuple(out)
