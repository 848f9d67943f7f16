"""One attempt at an answer on one backend: generate, split reasoning, check the contract, repair once.

Free text streams as it is produced. A reply under a contract (JSON schema or tools) is checked
before anything of it is passed on as the answer (a caller that asks for ``drafts`` sees its raw text as
it is produced, marked provisional, and a ``draft_reset`` before every repair try): if it breaks the
contract, the model sees its reply and what was wrong and gets ``structured.repair_attempts`` more
tries; then the attempt fails with FAILED_PRECONDITION naming the backend and the violation, which also
sends the request down the model list. Unvalidated JSON is never passed on as valid.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace

from geri.backends.base import Backend, ChatMessage, Completion, FinishReason, GenerationParams, ToolCall
from geri.reasoning import Piece, ThinkSplitter
from geri.structured.contract import ContractViolation, OutputContract, Reply
from wolf_service.errors import FailedPrecondition

# (kind, text) pieces as they are produced: kind is "text" or "thinking".
Piece_ = tuple[str, str]


@dataclass(frozen=True)
class AttemptResult:
    """What a successful attempt produced, with usage summed over its repair tries."""

    reply: Reply
    thinking: str
    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    model: str
    repairs: int


@dataclass
class _Output:
    text: list[str]
    thinking: list[str]
    calls: list[ToolCall]
    completion: Completion | None = None


def _generate(backend: Backend, messages: Sequence[ChatMessage], params: GenerationParams, model: str,
              cancel: threading.Event, stream_text: bool, drafts: bool) -> Generator[Piece_, None, _Output]:
    out = _Output([], [], [])
    splitter = ThinkSplitter()

    def route(piece: Piece) -> Generator[Piece_, None, None]:
        (out.text if piece.kind == "text" else out.thinking).append(piece.content)
        if piece.kind == "thinking" or stream_text:
            yield piece.kind, piece.content
        elif drafts:
            yield "draft", piece.content

    for event in backend.generate(messages, params, model, cancel):
        if isinstance(event, Completion):
            out.completion = event
            break
        if event.thinking:  # reasoning the backend already separated (Ollama's `thinking` field)
            out.thinking.append(event.thinking)
            yield "thinking", event.thinking
        out.calls.extend(event.tool_calls)
        for piece in splitter.feed(event.text) if event.text else ():
            yield from route(piece)
    for piece in splitter.flush():
        yield from route(piece)
    if out.completion is None:
        # A backend bug, not a client or dependency problem: INTERNAL, logged with the request id.
        raise RuntimeError(f"backend {backend.kind} ended the stream without a completion")
    return out


def attempt(backend: Backend, model: str, messages: Sequence[ChatMessage], params: GenerationParams,
            contract: OutputContract, *, repairs: int, cancel: threading.Event,
            count_tokens: Callable[[Sequence[ChatMessage]], int], drafts: bool = False
            ) -> Generator[Piece_, None, AttemptResult]:
    """Answer on ``backend``; yields streamable pieces, returns the checked result.

    ``drafts``: also yield a constrained reply's text as ``("draft", text)`` pieces while it is produced,
    and ``("draft_reset", "")`` before a repair try (the drafts so far are void).

    Raises:
        FailedPrecondition: the reply broke the contract after every repair try, or was cut off.
        ServiceError: from the backend (unreachable, timeout, missing model).
    """
    native = backend.native_tools
    params = replace(params, json_schema=contract.decoding_schema(native),
                     tools=contract.tools if native and contract.offers_tools else (),
                     tool_choice=contract.tool_choice)
    prompt_tokens = completion_tokens = 0
    thinking: list[str] = []
    for tries in range(repairs + 1):
        if tries and drafts:
            yield "draft_reset", ""
        out = yield from _generate(backend, messages, params, model, cancel, stream_text=not contract.constrained,
                                   drafts=drafts)
        assert out.completion is not None
        prompt_tokens += out.completion.prompt_tokens or count_tokens(messages)
        completion_tokens += out.completion.completion_tokens
        thinking += out.thinking
        text = "".join(out.text)
        finish = out.completion.finish_reason
        if finish == "stop" and params.max_tokens and out.completion.completion_tokens >= params.max_tokens:
            finish = "length"  # some servers (an Ollama proxy in front of llama.cpp) say "stop" when cut off
        if finish == "cancelled" or not contract.constrained:
            reply = Reply(text=text, tool_calls=tuple(out.calls) if finish != "cancelled" else ())
            return AttemptResult(reply, "".join(thinking), finish, prompt_tokens, completion_tokens,
                                 out.completion.model or model, tries)
        try:
            reply = contract.parse(text, out.calls, native_tools=native)
        except ContractViolation as violation:
            where = f"{backend.kind} model {model!r}"
            if finish == "length":
                raise FailedPrecondition(
                    f"{where} was cut off at max_tokens={params.max_tokens} before its reply was complete "
                    f"({violation}): raise metadata.max_tokens"
                ) from None
            if tries == repairs:
                raise FailedPrecondition(
                    f"{where} did not produce a valid reply after {repairs} repair attempt(s): {violation}"
                ) from None
            messages = [*messages, ChatMessage("assistant", text, tuple(out.calls)),
                        ChatMessage("user", contract.repair_instruction(violation, native_tools=native))]
            continue
        finish = "tool_calls" if reply.tool_calls else finish
        return AttemptResult(reply, "".join(thinking), finish, prompt_tokens, completion_tokens,
                             out.completion.model or model, tries)
    raise AssertionError("unreachable")  # the loop returns or raises
