"""One generation from request to response: validate, load the conversation, try the model list in order,
fit the prompt, answer (``geri.attempts``), store the turn, account.

Both RPCs (unary ``Generate`` and ``GenerateStream``) run this same pipeline, so a streamed
answer and a unary one are built identically; the unary call simply keeps the final event.
A backend that fails before anything of its answer was streamed hands the request to the next
entry of the model list; once text has reached the client, a failure is the client's error.
Grounded answers (``geri.answering``) run through here too: they store their own turn (``remember=False``)
and may read a constrained reply's provisional text as it is produced (``drafts=True``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from google.protobuf import timestamp_pb2
from wolf.v1 import common_pb2

from geri.attempts import AttemptResult, attempt
from geri.backends.base import ChatMessage, ContinuationScorer
from geri.prompting import FittedPrompt, fit_to_window, trim_history
from geri.routing import FALLBACK_ERRORS, Route, Router
from geri.sessions import SessionStore, Turn
from geri.sessions.store import check_owner
from geri.settings import GeriSettings
from geri.structured.contract import OutputContract
from geri.validation import ValidatedRequest, validate_request
from wolf_service.errors import Unavailable

log = logging.getLogger("geri.generation")

_MAX_ERROR = 300


@dataclass(frozen=True)
class StreamEvent:
    """What the pipeline emits: answer text, reasoning text, or the final response (last).

    With ``drafts``: ``draft`` is provisional text of a constrained reply (not yet checked), and
    ``draft_reset`` says the drafts so far are void (a repair try, or the next backend of the list).
    """

    kind: Literal["text", "thinking", "draft", "draft_reset", "final"]
    text: str = ""
    response: common_pb2.WolfResponse | None = None
    # final: the entries of the model list that failed or were skipped before the one that answered,
    # as (label, why).
    fallbacks: tuple[tuple[str, str], ...] = ()
    # final: the backend that answered, when it can also score continuations (the embedded one).
    scorer: ContinuationScorer | None = None


class GenerationPipeline:
    """Turns a ``WolfRequest`` into a stream of :class:`StreamEvent` using the model list."""

    def __init__(self, settings: GeriSettings, router: Router, sessions: SessionStore) -> None:
        self._settings = settings
        self._router = router
        self._sessions = sessions

    def first_scorer(self, model: str) -> ContinuationScorer | None:
        """The backend the model list tries first for ``model`` when it can score continuations (the embedded
        one) and its circuit breaker is closed, else None."""
        candidates = self._router.candidates(model)
        return _scoring(candidates[0][0]) if candidates else None

    def named_scorer(self, name: str) -> ContinuationScorer | None:
        """The backend of the model-list entry ``name`` when it can score continuations and its circuit breaker
        is closed, else None (also for ``""``)."""
        named = (_scoring(route) for route in self._router.routes if name and route.config.name == name)
        return next((backend for backend in named if backend is not None), None)

    def run(self, request: common_pb2.WolfRequest, cancel: threading.Event, *, remember: bool = True,
            drafts: bool = False, user: str = "", grounded: Callable[[int], OutputContract] | None = None
            ) -> Generator[StreamEvent, None, None]:
        """Generate the answer to ``request``.

        Args:
            request: The client's request (validated here).
            cancel: Set when the client is gone; generation stops and the final event says
                ``finish_reason="cancelled"``.
            remember: Store the exchange in ``metadata.session_id``'s session (the caller stores its own
                turn when False; the session's history is read either way).
            drafts: Emit ``draft`` / ``draft_reset`` events for a constrained reply (see StreamEvent).
            user: The caller's validated ``x-wolf-user`` ("" without one): the session is this user's own.
            grounded: For a reply that must rest on the context (a grounded answer): the contract for the first
                ``k`` context documents, used when the window keeps only ``k``; at least one must fit.

        Raises:
            InvalidArgument: a field is wrong, or the question alone does not fit the window
                (``ContextDoesNotFit``: with ``grounded``, none of the documents fits beside it).
            PermissionDenied: the caller's session belongs to another data owner.
            FailedPrecondition / Unavailable / DeadlineExceeded: no backend of the list could answer.
        """
        started = time.monotonic()
        validated = validate_request(request, self._settings)
        # The work a cached prompt saves is its user's own: how fast a prompt starts must not tell one user what
        # another asked (their prompts carry their own conversations).
        req = replace(validated, user_id=user,
                      params=replace(validated.params, cache_scope=f"{validated.params.cache_scope}\x00{user}"))
        history: list[ChatMessage] = []
        if req.session_id:
            record = self._sessions.get(req.tenant, req.session_id, user=req.user_id)
            check_owner(record, req.owner_id)
            history = [t.message() for t in record.turns] if record else []
        failures: list[tuple[str, Exception | None]] = []
        skipped: list[tuple[str, str]] = []
        drafted = False
        for route, model in self._router.candidates(req.model):
            if not route.breaker.allow():
                failures.append((f"{route.label}: circuit breaker open", None))
                skipped.append((route.label, "circuit breaker open"))
                continue
            streamed = False
            attempt_started = time.monotonic()
            if drafted:
                yield StreamEvent("draft_reset")
                drafted = False
            work = self._on_route(route, model, req, history, cancel, drafts, grounded)
            try:
                while True:
                    event = next(work)
                    streamed = streamed or event.kind == "text"
                    drafted = drafted or event.kind == "draft"
                    yield event
            except StopIteration as done:
                result, fitted = done.value
            except Exception as exc:
                self._router.failed(route, exc)
                if not isinstance(exc, FALLBACK_ERRORS):  # the client's request, or a bug (INTERNAL)
                    raise
                if streamed or cancel.is_set():
                    raise
                failures.append((f"{route.label}: {str(exc)[:_MAX_ERROR]}", exc))
                skipped.append((route.label, str(exc)[:_MAX_ERROR]))
                continue
            except BaseException:  # the client went away mid-stream (GeneratorExit): no verdict on the backend
                route.breaker.release()
                raise
            if result.finish_reason == "cancelled":
                route.breaker.release()
            else:
                self._router.succeeded(route)
                if remember:
                    self._remember(req, result)
            yield StreamEvent("final", response=self._response(req, route, result, fitted, started, attempt_started),
                              fallbacks=tuple(skipped),
                              scorer=route.backend if isinstance(route.backend, ContinuationScorer) else None)
            return
        raise self._exhausted(failures)

    def _on_route(self, route: Route, model: str, req: ValidatedRequest, history: Sequence[ChatMessage],
                  cancel: threading.Event, drafts: bool, grounded: Callable[[int], OutputContract] | None = None
                  ) -> Generator[StreamEvent, None, tuple[AttemptResult, FittedPrompt]]:
        backend = route.backend
        model = backend.resolve_model(model)

        def count(messages: Sequence[ChatMessage]) -> int:
            return backend.count_tokens(messages, model)

        turns = [*trim_history(history, self._settings.sessions.history_tokens, count), *req.messages]
        fitted = fit_to_window(
            system_prompt=req.system_prompt, question=req.prompt, documents=req.documents, language=req.language,
            window=backend.context_window(model), max_tokens=req.params.max_tokens, count_tokens=count,
            history=turns, require_documents=grounded is not None,
        )
        # The window dropped the last documents: the contract must not let the model cite what it was not shown.
        contract = grounded(len(fitted.kept_document_ids)) if grounded and fitted.dropped_document_ids else req.contract
        pieces = attempt(backend, model, fitted.messages, req.params, contract,
                         repairs=self._settings.structured.repair_attempts, cancel=cancel, count_tokens=count,
                         drafts=drafts)
        try:
            while True:
                kind, text = next(pieces)
                yield StreamEvent(kind, text)  # type: ignore[arg-type]
        except StopIteration as done:
            return done.value, fitted

    def _remember(self, req: ValidatedRequest, result: AttemptResult) -> None:
        """Append this exchange to the session: caller-supplied turns, the question, the answer."""
        if not req.session_id:
            return
        turns = [Turn(m.role, m.content, m.tool_calls, m.tool_call_id) for m in req.messages]
        if req.prompt.strip():
            turns.append(Turn("user", req.prompt))
        turns.append(Turn("assistant", result.reply.text, result.reply.tool_calls))
        self._sessions.append(req.tenant, req.session_id, req.owner_id, turns, user=req.user_id)

    @staticmethod
    def _exhausted(failures: list[tuple[str, Exception | None]]) -> Exception:
        """The error when no entry of the model list could answer: a lone backend's own error; else one
        naming each entry and why, with their common status (UNAVAILABLE when they differ)."""
        if len(failures) == 1 and failures[0][1] is not None:
            return failures[0][1]
        detail = "; ".join(text for text, _ in failures)
        kinds = {type(exc) for _, exc in failures if exc is not None}
        skipped = any(exc is None for _, exc in failures)  # breaker open: not even tried
        kind = kinds.pop() if len(kinds) == 1 and not skipped else Unavailable
        return kind(f"no backend could answer: {detail}")

    def _response(self, req: ValidatedRequest, route: Route, result: AttemptResult, fitted: FittedPrompt,
                  started: float, attempt_started: float) -> common_pb2.WolfResponse:
        now = time.monotonic()
        reply = result.reply
        llm = common_pb2.LLMResponse(
            text=reply.text, json=reply.json, thinking=result.thinking,
            tool_calls=[common_pb2.ToolCall(id=c.id, name=c.name, arguments_json=json.dumps(c.arguments))
                        for c in reply.tool_calls],
            prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
            tokens_used=result.prompt_tokens + result.completion_tokens,
            latency_ms=int((now - attempt_started) * 1000),
            model_used=result.model, finish_reason=result.finish_reason, backend=route.backend.kind,
            repair_attempts=result.repairs,
        )
        timestamp = timestamp_pb2.Timestamp()
        timestamp.GetCurrentTime()
        metadata = common_pb2.ResponseMetadata(
            timestamp=timestamp, warnings=fitted.warnings, dropped_document_ids=fitted.dropped_document_ids,
            duration_ms=int((now - started) * 1000),
        )
        log.info(
            "request_id=%s backend=%s model=%s finish=%s prompt_tokens=%d completion_tokens=%d repairs=%d "
            "dropped=%d", req.request_id, route.label, llm.model_used, llm.finish_reason, llm.prompt_tokens,
            llm.completion_tokens, result.repairs, len(fitted.dropped_document_ids),
        )
        return common_pb2.WolfResponse(request_id=req.request_id, model_type=common_pb2.LLM, llm_response=llm,
                                       metadata=metadata)


def _scoring(route: Route) -> ContinuationScorer | None:
    """``route``'s backend when it can score continuations and its circuit breaker is closed."""
    backend = route.backend
    return backend if route.breaker.state == "closed" and isinstance(backend, ContinuationScorer) else None
