"""OpenAI chat completions on top of Odin: the last user message is the question; ``rag`` (default)
answers it from the index with Odin's grounded ``ask`` (citations, or an honest "the documents do not
say"; streamed by :mod:`odin_client.gateway.answer_stream`); ``rag: false`` lets Geri answer alone, with
the earlier messages as the conversation."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from typing import Any

from wolf.v1 import common_pb2

from odin_client.client import OdinClient
from odin_client.gateway.answer_stream import answer_text, chunk, guarded, rag_extension, relay
from odin_client.gateway.errors import GatewayError
from odin_client.gateway.schemas import ChatRequest
from odin_client.gateway.settings import GatewaySettings
from odin_client.types.results import Answer, Generation


def check(req: ChatRequest, limits: GatewaySettings) -> None:
    """Refuse what the gateway will not pass on, naming the limit."""
    if len(req.messages) > limits.max_messages:
        raise GatewayError(413, f"messages holds {len(req.messages)} messages, over the gateway's "
                                f"max_messages ({limits.max_messages})", code="too_many_messages", param="messages")
    for i, message in enumerate(req.messages):
        if isinstance(message.content, list) and any(p.get("type") != "text" for p in message.content):
            raise GatewayError(400, f"messages[{i}]: only text content parts are supported",
                               code="unsupported_content", param=f"messages[{i}].content")
        if len(message.text()) > limits.max_message_chars:
            raise GatewayError(413, f"messages[{i}] is {len(message.text()):,} characters, over the gateway's "
                                    f"max_message_chars ({limits.max_message_chars:,})", code="message_too_long",
                               param=f"messages[{i}].content")
    if req.messages[-1].role != "user" or not req.messages[-1].text().strip():
        raise GatewayError(400, "the last message must be a non-empty user message (the question)",
                           code="missing_question", param="messages")
    if req.rag and req.response_format is not None and req.response_format.type != "text":
        raise GatewayError(400, "response_format needs \"rag\": false (grounded answers have their own form)",
                           code="response_format_needs_rag_off", param="response_format")


def _history(req: ChatRequest) -> list[common_pb2.ChatTurn]:
    return [common_pb2.ChatTurn(role=m.role, content=m.text()) for m in req.messages[:-1]
            if m.role in ("user", "assistant") and m.text().strip()]


def _system(req: ChatRequest) -> str:
    return "\n".join(m.text() for m in req.messages if m.role in ("system", "developer")).strip()


def _generate_options(req: ChatRequest) -> dict[str, Any]:
    options: dict[str, Any] = {"model": req.model, "max_tokens": req.max_completion_tokens or req.max_tokens,
                               "temperature": req.temperature, "tenant_id": req.tenant_id,
                               "system_prompt": _system(req), "messages": _history(req)}
    fmt = req.response_format
    if fmt is not None and fmt.type == "json_schema":
        schema = (fmt.json_schema or {}).get("schema")
        if not isinstance(schema, dict):
            raise GatewayError(400, "response_format.json_schema.schema must be a JSON schema object",
                               code="invalid_json_schema", param="response_format.json_schema.schema")
        options["json_schema"] = schema
    elif fmt is not None and fmt.type == "json_object":
        options["json_schema"] = {"type": "object"}
    return options


def _ask_options(req: ChatRequest) -> dict[str, Any]:
    """``ask`` arguments: the last user message is the question, the earlier ones its conversation."""
    return {"top_k": req.top_k, "filters": req.filters, "tenant_id": req.tenant_id, "model": req.model,
            "max_tokens": req.max_completion_tokens or req.max_tokens, "history": _history(req)}


def ask(client: OdinClient, req: ChatRequest) -> Answer:
    """The grounded answer to the last user message, the earlier ones as conversation history."""
    return client.ask(req.messages[-1].text(), **_ask_options(req))


def _usage(gen: Generation | None) -> dict[str, int]:
    prompt, completion = (gen.prompt_tokens, gen.completion_tokens) if gen else (0, 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(client: OdinClient, req: ChatRequest) -> dict[str, Any]:
    """A whole ``chat.completion`` object."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time())}
    if req.rag:
        answer = ask(client, req)
        gen = answer.generation
        return {**base, "model": gen.model if gen else req.model or "none",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer_text(answer)},
                             "finish_reason": "stop"}], "usage": _usage(gen), "rag": rag_extension(answer)}
    gen = client.generate(req.messages[-1].text(), **_generate_options(req))
    return {**base, "model": gen.model, "usage": _usage(gen),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": gen.json or gen.text},
                         "finish_reason": "length" if gen.finish_reason == "length" else "stop"}]}


def stream(client: OdinClient, req: ChatRequest, *, provisional: bool) -> Iterator[str]:
    """Server-sent events in OpenAI's chunk format, ending with ``data: [DONE]``.

    The upstream call starts before the first event is produced, so a refusal (bad input, a service
    down) is still an HTTP error; a failure after that is an ``error`` event. A grounded answer streams
    as :mod:`odin_client.gateway.answer_stream` says (``provisional``: send the text before it is checked);
    a reply constrained by ``response_format`` arrives in one content chunk.
    """
    cid = f"chatcmpl-{uuid.uuid4().hex}"
    if req.rag:
        answers = client.ask_stream(req.messages[-1].text(), **_ask_options(req))
        return relay(cid, req.model or "default", next(answers), answers, provisional=provisional, usage=_usage)
    events = client.generate_stream(req.messages[-1].text(), **_generate_options(req))
    first = next(events)
    return _relay(cid, req.model or "default", first, events)


def _relay(cid: str, model: str, first: str | Generation, events: Iterator[str | Generation]) -> Iterator[str]:
    return guarded(_generation_frames(cid, model, first, events), events)


def _generation_frames(cid: str, model: str, first: str | Generation,
                       events: Iterator[str | Generation]) -> Iterator[str]:
    yield chunk(cid, model, {"role": "assistant", "content": ""})
    sent = False
    for event in itertools.chain([first], events):
        if isinstance(event, Generation):
            if not sent and (event.json or event.text):
                yield chunk(cid, event.model, {"content": event.json or event.text})
            yield chunk(cid, event.model, {}, "length" if event.finish_reason == "length" else "stop",
                        usage=_usage(event))
        else:
            sent = True
            yield chunk(cid, model, {"content": event})
