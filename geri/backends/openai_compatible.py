"""OpenAI-compatible backend: vLLM, TGI, llama.cpp's server, SGLang, `transformers serve`, or OpenAI itself,
spoken to with the official ``openai`` client.

Structured output goes as ``response_format`` (json_schema) and tools as native tool definitions;
a server that ignores either is caught by Geri's reply check (one repair, then a clear error), and
one that refuses them (HTTP 400/422) is FAILED_PRECONDITION naming the server. Retries are not the
client's job here: ``max_retries=0``, because Geri's model list falls back to the next backend and
its circuit breaker decides when to try this one again (docs/decisions/0001-retry-policy.md).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import openai

from geri.backends.base import (
    BackendStats,
    ChatMessage,
    Completion,
    Delta,
    FinishReason,
    GenerationParams,
    ModelDescription,
    ToolCall,
    new_call_id,
)
from geri.backends.chat_markers import ReplyStream, as_remote_text, as_remote_value, as_reply_text
from geri.backends.token_estimate import estimate_sent_tokens
from geri.settings import GeriSettings, ModelRoute
from wolf_service.errors import DeadlineExceeded, FailedPrecondition, ServiceError, Unavailable

log = logging.getLogger("geri.openai")

_TOKENS_PER_MESSAGE = 8
_TOKENS_PER_PROMPT = 8


class OpenAICompatibleBackend:
    """Generates with a model on an OpenAI-compatible HTTP server."""

    kind = "openai"
    native_tools = True

    def __init__(self, route: ModelRoute, settings: GeriSettings, client: openai.OpenAI | None = None) -> None:
        self._settings = settings
        self._route = route
        self._base_url = route.base_url or settings.openai_base_url
        key = os.environ.get(route.api_key_env, "") if route.api_key_env else ""
        if not key and settings.openai_api_key is not None:
            key = settings.openai_api_key.get_secret_value()
        self._client = client or openai.OpenAI(
            base_url=self._base_url, api_key=key or "EMPTY", max_retries=0,
            timeout=openai.Timeout(route.read_timeout_s, connect=route.connect_timeout_s),
        )
        self.stats = BackendStats()

    @property
    def default_model(self) -> str:
        """The route's model."""
        return self._route.backend_model

    def prepare(self) -> None:
        """Check the server answers; only log, since it may come up later (health reports it)."""
        try:
            self.probe()
        except ServiceError as exc:
            log.warning("OpenAI-compatible server at %s is not ready (%s)", self._base_url, exc)

    def resolve_model(self, requested: str) -> str:
        """The requested model, else the route's; the server says at generation time if it lacks it."""
        return requested or self.default_model

    def context_window(self, model: str) -> int:
        """``num_ctx``: the OpenAI API does not report a model's window."""
        return self._settings.num_ctx

    def count_tokens(self, messages: Sequence[ChatMessage], model: str) -> int:
        """An upper estimate, as for Ollama: the server's tokenizer is unknown here."""
        margin = self._settings.ollama_token_margin
        return _TOKENS_PER_PROMPT + sum(_TOKENS_PER_MESSAGE + estimate_sent_tokens(m.content, margin)
                                        for m in messages)

    def list_models(self) -> list[ModelDescription]:
        """``GET /models``."""
        try:
            listing = self._client.models.list()
        except Exception as exc:
            raise self._translate(exc, "") from exc
        return [ModelDescription(name=m.id, backend=self.kind, family=str(getattr(m, "owned_by", "") or ""))
                for m in listing.data]

    def probe(self) -> None:
        """``GET /models``: cheap, and fails the way generation would if the server is down. A server
        without that endpoint (404/405/501) answered, so it is up."""
        try:
            self._client.models.list()
        except openai.APIStatusError as exc:
            if exc.status_code not in (404, 405, 501):
                raise self._translate(exc, "") from exc
        except Exception as exc:
            raise self._translate(exc, "") from exc

    def _request(self, messages: Sequence[ChatMessage], params: GenerationParams, model: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model, "messages": [_wire_message(m) for m in messages], "stream": True,
            "max_tokens": params.max_tokens, "temperature": params.temperature,
            "stream_options": {"include_usage": True},
        }
        if params.top_p is not None:
            body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
        if params.stop:
            body["stop"] = list(params.stop)
        if params.json_schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": params.json_schema}}
        if params.tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}} for t in params.tools]
            body["tool_choice"] = params.tool_choice
        return body

    def generate(
        self, messages: Sequence[ChatMessage], params: GenerationParams, model: str, cancel: threading.Event,
    ) -> Iterator[Delta | Completion]:
        """Stream ``/chat/completions``; closing the response stops the server generating."""
        self.stats.started()
        stream: Any = None
        finish: FinishReason = "stop"
        prompt_tokens = completion_tokens = chunks = 0
        calls: dict[int, dict[str, str]] = {}
        said, thought = ReplyStream(), ReplyStream()
        try:
            stream = self._client.chat.completions.create(**self._request(messages, params, model))
            for chunk in stream:
                if cancel.is_set():
                    finish = "cancelled"
                    break
                if chunk.usage is not None:
                    prompt_tokens = int(chunk.usage.prompt_tokens or 0)
                    completion_tokens = int(chunk.usage.completion_tokens or 0)
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                for part in delta.tool_calls or ():
                    slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = part.id or slot["id"]
                    if part.function is not None:
                        slot["name"] += part.function.name or ""
                        slot["arguments"] += part.function.arguments or ""
                thinking = str(getattr(delta, "reasoning_content", None) or "")
                if delta.content or thinking:
                    chunks += 1
                    self.stats.produced(1)
                    yield Delta(text=said.restore(delta.content or ""), thinking=thought.restore(thinking))
                if choice.finish_reason == "length":
                    finish = "length"
        except ServiceError:
            raise
        except Exception as exc:
            raise self._translate(exc, model) from exc
        finally:
            if stream is not None:
                stream.close()
            self.stats.finished()
        if calls and finish != "cancelled":
            yield Delta(tool_calls=tuple(self._tool_call(slot) for _, slot in sorted(calls.items())))
            finish = "tool_calls"
        yield Completion(finish, prompt_tokens, completion_tokens or chunks, model)

    def _tool_call(self, slot: dict[str, str]) -> ToolCall:
        try:
            arguments = json.loads(as_reply_text(slot["arguments"]) or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            raise FailedPrecondition(
                f"OpenAI-compatible server at {self._base_url} returned a call of tool {slot['name'][:64]!r} whose "
                "arguments are not a JSON object"
            )
        return ToolCall(id=slot["id"] or new_call_id(), name=slot["name"], arguments=arguments)

    def _translate(self, exc: BaseException, model: str) -> ServiceError:
        """Turn a client exception into the status a Geri client should see, naming the server."""
        where = f"OpenAI-compatible server at {self._base_url}"
        if isinstance(exc, openai.APITimeoutError):
            return DeadlineExceeded(f"{where} did not answer within {self._route.read_timeout_s:g}s (read_timeout_s)")
        if isinstance(exc, openai.APIConnectionError):
            return Unavailable(f"cannot reach {where}: is it running? ({type(exc.__cause__ or exc).__name__})")
        if isinstance(exc, openai.NotFoundError):
            return FailedPrecondition(f"model {model!r} is not served by {where}: check models[].model")
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return FailedPrecondition(f"{where} refused the API key (HTTP {exc.status_code}): check api_key_env")
        if isinstance(exc, openai.BadRequestError | openai.UnprocessableEntityError):
            return FailedPrecondition(f"{where} refused the request (HTTP {exc.status_code}): {_detail(exc)}")
        if isinstance(exc, openai.APIStatusError):
            return Unavailable(f"{where} failed (HTTP {exc.status_code}): {_detail(exc)}")
        return Unavailable(f"{where} sent a response Geri cannot read ({type(exc).__name__}: {str(exc)[:200]})")

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _detail(exc: openai.APIStatusError) -> str:
    return str(exc.message)[:300]


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": as_remote_text(message.content)}
    if message.tool_calls:
        wire["tool_calls"] = [{"id": c.id, "type": "function",
                               "function": {"name": c.name, "arguments": json.dumps(as_remote_value(c.arguments))}}
                              for c in message.tool_calls]
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    return wire
