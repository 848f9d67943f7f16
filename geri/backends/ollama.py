"""Ollama backend: the production LLM server, spoken to with the official ``ollama`` client.

Errors are translated once here: a model the server does not have is FAILED_PRECONDITION
(with the ``ollama pull`` command to fix it), an unreachable server is UNAVAILABLE so clients
may retry, and a server that stops answering is DEADLINE_EXCEEDED. Prompt sizes are estimated
with tiktoken times a safety margin, since Ollama models bring their own tokenizers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import ollama

from geri.backends.base import (
    BackendStats,
    ChatMessage,
    Completion,
    Delta,
    FinishReason,
    GenerationParams,
    ModelDescription,
    ToolCall,
    ToolSpec,
    new_call_id,
)
from geri.backends.chat_markers import ReplyStream, as_remote_text, as_remote_value, as_reply_value
from geri.backends.token_estimate import estimate_sent_tokens
from geri.settings import GeriSettings
from wolf_service.errors import DeadlineExceeded, FailedPrecondition, ServiceError, Unavailable

log = logging.getLogger("geri.ollama")

# Chat templates wrap each message in role markers; allow for them on top of the content estimate.
_TOKENS_PER_MESSAGE = 8
_TOKENS_PER_PROMPT = 8


class OllamaBackend:
    """Generates with a model on an Ollama server (or anything speaking its API)."""

    kind = "ollama"
    native_tools = True

    def __init__(self, settings: GeriSettings, client: ollama.Client | None = None) -> None:
        self._settings = settings
        self._host = settings.ollama_host
        self._client = client or ollama.Client(
            host=settings.ollama_host,
            timeout=httpx.Timeout(settings.ollama_read_timeout_s, connect=settings.ollama_connect_timeout_s),
        )
        # Model name -> its context length (0 = unknown), filled on first use of each model.
        self._known: dict[str, int] = {}
        self._known_lock = threading.Lock()
        self.stats = BackendStats()

    @property
    def default_model(self) -> str:
        """``GERI_OLLAMA_MODEL``."""
        return self._settings.ollama_model

    def prepare(self) -> None:
        """Check the default model is there; only log problems, since Ollama may come up (or pull) later."""
        try:
            self.resolve_model("")
        except ServiceError as exc:
            log.warning("Ollama is not ready (%s); requests fail with %s until it is", exc, exc.grpc_code.name)

    def resolve_model(self, requested: str) -> str:
        """Return the model to use, checking once per model that the server has it."""
        model = requested or self.default_model
        with self._known_lock:
            if model in self._known:
                return model
        try:
            info = self._client.show(model)
        except Exception as exc:
            raise self._translate(exc, model) from exc
        context_length = 0
        for key, value in (info.modelinfo or {}).items():
            if key.endswith(".context_length") and isinstance(value, int):
                context_length = value
        with self._known_lock:
            self._known[model] = context_length
        return model

    def context_window(self, model: str) -> int:
        """``GERI_NUM_CTX`` (sent as num_ctx), capped by the model's trained length when Ollama reports it."""
        with self._known_lock:
            trained = self._known.get(model, 0)
        return min(self._settings.num_ctx, trained) if trained else self._settings.num_ctx

    def count_tokens(self, messages: Sequence[ChatMessage], model: str) -> int:
        """An upper estimate: tiktoken count times ``GERI_OLLAMA_TOKEN_MARGIN`` plus template overhead."""
        margin = self._settings.ollama_token_margin
        return _TOKENS_PER_PROMPT + sum(
            _TOKENS_PER_MESSAGE + estimate_sent_tokens(m.content, margin) for m in messages
        )

    def list_models(self) -> list[ModelDescription]:
        """Models the Ollama server has pulled."""
        try:
            listing = self._client.list()
        except Exception as exc:
            raise self._translate(exc, "") from exc
        models = []
        for entry in listing.models:
            name = entry.model or ""
            with self._known_lock:
                context_length = self._known.get(name, 0)
            models.append(
                ModelDescription(
                    name=name,
                    backend=self.kind,
                    size_bytes=int(entry.size or 0),
                    context_length=context_length,
                    family=(entry.details.family or "") if entry.details else "",
                )
            )
        return models

    def _options(self, params: GenerationParams) -> dict[str, Any]:
        options: dict[str, Any] = dict(self._settings.ollama_options)
        options.update(
            num_ctx=self._settings.num_ctx, num_predict=params.max_tokens, temperature=params.temperature
        )
        if params.top_p is not None:
            options["top_p"] = params.top_p
        if params.seed is not None:
            options["seed"] = params.seed
        if params.stop:
            options["stop"] = list(params.stop)
        return options

    def generate(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        model: str,
        cancel: threading.Event,
    ) -> Iterator[Delta | Completion]:
        """Stream from ``/api/chat``; closing the HTTP response is what stops Ollama generating."""
        self.stats.started()
        chunks = 0
        prompt_tokens = 0
        completion_tokens = 0
        finish: FinishReason = "stop"
        stream: Iterator[ollama.ChatResponse] | None = None
        said, thought = ReplyStream(), ReplyStream()
        try:
            stream = self._client.chat(
                model=model,
                messages=[_wire_message(m) for m in messages],
                options=self._options(params),
                keep_alive=self._settings.ollama_keep_alive,
                stream=True,
                format=params.json_schema,
                tools=[_wire_tool(t) for t in params.tools] if params.tools and params.tool_choice != "none" else None,
            )
            for part in stream:
                if cancel.is_set():
                    finish = "cancelled"
                    break
                thinking = thought.restore(part.message.thinking or "")
                text = said.restore(part.message.content or "")
                calls = tuple(
                    ToolCall(id=new_call_id(), name=c.function.name,
                             arguments=as_reply_value(dict(c.function.arguments or {})))
                    for c in part.message.tool_calls or ()
                )
                if thinking or text or calls:
                    chunks += 1
                    self.stats.produced(1)
                    yield Delta(text=text, thinking=thinking, tool_calls=calls)
                if calls:
                    finish = "tool_calls"
                if part.done:
                    prompt_tokens = int(part.prompt_eval_count or 0)
                    completion_tokens = int(part.eval_count or 0)
                    if finish != "tool_calls":
                        finish = "length" if part.done_reason == "length" else "stop"
        except ServiceError:
            raise
        except Exception as exc:
            error = self._translate(exc, model)
            if isinstance(error, FailedPrecondition):
                with self._known_lock:  # deleted since it was checked: check again next time
                    self._known.pop(model, None)
            raise error from exc
        finally:
            if stream is not None and hasattr(stream, "close"):
                stream.close()  # ends the `with client.stream(...)` block: the connection is closed
            self.stats.finished()
        if finish in ("stop", "length") and completion_tokens and completion_tokens >= params.max_tokens:
            finish = "length"  # some Ollama-protocol servers report "stop" when num_predict ran out
        # Ollama omits prompt_eval_count when the prompt was cached; 0 tells the caller to use its count.
        yield Completion(finish, prompt_tokens, completion_tokens or chunks, model)

    def probe(self) -> None:
        """List the server's models: cheap, and fails the way generation would if the server is down."""
        try:
            self._client.list()
        except Exception as exc:
            raise self._translate(exc, "") from exc

    def _translate(self, exc: BaseException, model: str) -> ServiceError:
        """Turn a client exception into the status a Geri client should see."""
        if isinstance(exc, ollama.ResponseError):
            # Ollama answers 404 for an unknown model; mid-stream errors carry no status, only the text.
            if model and (exc.status_code == 404 or "not found" in exc.error.lower()):
                return FailedPrecondition(
                    f"model '{model}' is not available on the Ollama server at {self._host}: pull it with "
                    f"`ollama pull {model}` or choose another model (GERI_OLLAMA_MODEL / generation.model). "
                    f"Ollama said: {exc.error}"
                )
            return Unavailable(f"Ollama at {self._host} failed (HTTP {exc.status_code}): {exc.error}")
        if isinstance(exc, httpx.TimeoutException):
            return DeadlineExceeded(
                f"Ollama at {self._host} did not answer within {self._settings.ollama_read_timeout_s:g}s "
                "(GERI_OLLAMA_READ_TIMEOUT_S)"
            )
        if isinstance(exc, ConnectionError | httpx.TransportError):
            return Unavailable(
                f"cannot reach Ollama at {self._host} ({type(exc).__name__}): is it running? "
                "Set GERI_OLLAMA_HOST if it listens elsewhere"
            )
        return Unavailable(f"Ollama at {self._host} failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    """A chat turn in Ollama's /api/chat shape (tool calls and tool results included)."""
    wire: dict[str, Any] = {"role": message.role, "content": as_remote_text(message.content)}
    if message.tool_calls:
        wire["tool_calls"] = [{"function": {"name": c.name, "arguments": as_remote_value(c.arguments)}}
                              for c in message.tool_calls]
    if message.role == "tool" and message.tool_call_id:
        wire["tool_call_id"] = message.tool_call_id
    return wire


def _wire_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}
