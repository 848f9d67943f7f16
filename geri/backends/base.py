"""The one interface every LLM backend implements, and the types it speaks.

A backend takes chat ``messages`` (system + user) that already fit its window, streams
:class:`Delta` events as the model produces them and ends with one :class:`Completion`
holding usage. It stops early when the ``cancel`` event is set (client gone, deadline
hit, server shutting down). Backends raise :mod:`wolf_service.errors` exceptions so the
gRPC status a client sees is decided by the backend that knows what went wrong.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "length", "cancelled", "tool_calls"]
Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A tool the model asked to run, with its arguments (a JSON object, parsed)."""

    id: str
    name: str
    arguments: dict[str, Any]


def new_call_id() -> str:
    """An id for a tool call whose backend gave none."""
    return f"call_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, what it does, JSON Schema of its arguments object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn handed to the model. Assistant turns may carry tool calls; tool turns answer one."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True)
class GenerationParams:
    """Sampling and length settings of one generation, already validated.

    ``json_schema``: the output must be JSON valid against it; backends constrain decoding to it
    where they can (embedded: grammar-constrained sampling; Ollama ``format``; OpenAI
    ``response_format``). ``tools``: offered natively to backends that take tool definitions.
    """

    max_tokens: int
    temperature: float
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    cache_scope: str = ""  # whose earlier prompts a backend may reuse work from (the tenant); never shared


@dataclass(frozen=True)
class Delta:
    """A piece of output. ``thinking`` is reasoning a backend reported separately from the answer;
    ``tool_calls`` are native tool calls a backend reported (complete, not fragments)."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Completion:
    """Last event of a generation: why it ended and what it cost."""

    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    model: str


@dataclass(frozen=True)
class ModelDescription:
    """A model a backend can serve (mirrors ``wolf.v1.ModelInfo``)."""

    name: str
    backend: str
    size_bytes: int = 0
    context_length: int = 0
    family: str = ""


@dataclass
class BackendStats:
    """Counters a backend keeps about its own work (for logs, metrics and tests)."""

    active_generations: int = 0
    generations_started: int = 0
    tokens_generated: int = 0
    precision_fallbacks: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def started(self) -> None:
        """Record that a generation began."""
        with self._lock:
            self.active_generations += 1
            self.generations_started += 1

    def produced(self, tokens: int) -> None:
        """Record ``tokens`` newly generated tokens."""
        with self._lock:
            self.tokens_generated += tokens

    def fell_back(self) -> None:
        """Record that the model left a faster, reduced precision for float32 (its numbers were not finite)."""
        with self._lock:
            self.precision_fallbacks += 1

    def finished(self) -> None:
        """Record that a generation ended (normally, by error or cancelled)."""
        with self._lock:
            self.active_generations -= 1


@runtime_checkable
class Backend(Protocol):
    """An LLM that Geri can generate with."""

    kind: str
    """``"ollama"``, ``"openai"`` or ``"embedded"``; reported in ``ModelInfo.backend``."""

    native_tools: bool
    """Whether tools go to the model as native tool definitions (else as a JSON-schema contract)."""

    stats: BackendStats

    @property
    def default_model(self) -> str:
        """Model used when a request names none."""
        ...

    def prepare(self) -> None:
        """Load weights or check the server, so the first request is not the slow one."""
        ...

    def resolve_model(self, requested: str) -> str:
        """Return the model to use for ``requested`` ("" = default).

        Raises:
            FailedPrecondition: the model is not available, with how to make it available.
            Unavailable: the backend cannot be reached.
        """
        ...

    def context_window(self, model: str) -> int:
        """Tokens the model can attend to (prompt + generated)."""
        ...

    def count_tokens(self, messages: Sequence[ChatMessage], model: str) -> int:
        """Tokens ``messages`` occupy once formatted for the model (an upper estimate if not exact)."""
        ...

    def generate(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        model: str,
        cancel: threading.Event,
    ) -> Iterator[Delta | Completion]:
        """Stream the answer: any number of :class:`Delta`, then exactly one :class:`Completion`.

        Setting ``cancel`` stops the generation on the backend; the stream then ends with
        ``finish_reason="cancelled"``.
        """
        ...

    def list_models(self) -> list[ModelDescription]:
        """Models this backend can serve."""
        ...

    def probe(self) -> None:
        """Cheap liveness check for health and the circuit breaker; raises a ServiceError when down."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...


@runtime_checkable
class ContinuationScorer(Protocol):
    """A backend that can say how likely its model finds given continuations of a prompt (no generation):
    the embedded one; a remote server cannot score arbitrary continuations cheaply."""

    def score_continuations(self, prompt: str, continuations: Sequence[str], shared_prefix: str = "",
                            cancel: threading.Event | None = None) -> list[list[float]]:
        """The log-probability of each token of each continuation right after the plain-text ``prompt``;
        ``shared_prefix``: fixed text ``prompt`` starts with, the same in every call, that may be run once;
        ``cancel``: set when the caller has gone, so the call stops waiting for the model.

        Raises:
            InvalidArgument: the prompt and the longest continuation do not fit the model's window.
            Cancelled: ``cancel`` was set while the call waited for the model.
        """
        ...


@runtime_checkable
class HoldsModel(Protocol):
    """A scorer whose model one thread can keep for a run of scoring calls (the embedded backend)."""

    def held(self, cancel: threading.Event | None = None) -> contextlib.AbstractContextManager[None]:
        """Keep the model, from the block's first scoring call until the block ends (``cancel``: the caller's)."""
        ...


def holding(scorer: object, cancel: threading.Event | None = None) -> contextlib.AbstractContextManager[None]:
    """``scorer``'s model kept for the block when it can be (:class:`HoldsModel`), else nothing held: the scoring
    calls of one step queue for the model once, not once each."""
    return scorer.held(cancel) if isinstance(scorer, HoldsModel) else contextlib.nullcontext()
