"""The grounded ``ask`` as one sans-IO flow, driven by the blocking and by the asyncio client alike.

The flow is a generator that yields the calls it needs (:class:`SessionCall`, :class:`GenerateCall`,
:class:`RetrieveCall`) and receives their results; it returns the :class:`~odin_client.results.Answer`.
Steps: in a conversation, rewrite the question into a standalone query from the session's history;
optionally ask for query variants; retrieve; abstain when no source reaches ``answer_min_score``;
otherwise ask Geri for a schema-constrained answer over the numbered sources and ground it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from wolf.v1 import common_pb2

from odin_client.answering.grounding import ground
from odin_client.answering.queries import (
    REWRITE_SCHEMA,
    REWRITE_SYSTEM,
    VARIANTS_SYSTEM,
    history_turns,
    parse_rewrite,
    parse_variants,
    variants_schema,
)
from odin_client.answering.schema import answer_schema, system_prompt
from odin_client.answering.sources import number_sources
from odin_client.errors import OdinError
from odin_client.results import Answer, Generation, Retrieval, Timings
from odin_client.settings import OdinSettings

log = logging.getLogger("odin_client.answering")
T = TypeVar("T")
C = TypeVar("C")


@dataclass(frozen=True)
class SessionCall:
    """Fetch a Geri session (None when it does not exist)."""

    session_id: str
    tenant_id: str | None


@dataclass(frozen=True)
class RetrieveCall:
    """RetrieveContext for ``query`` (and its variants)."""

    query: str
    variants: tuple[str, ...]
    options: dict[str, Any]


@dataclass(frozen=True)
class GenerateCall:
    """Generate with these keyword arguments (see ``OdinClient.generate``). An ``optional`` call that fails
    (a rewrite, query variants) sends back None instead of failing the whole answer."""

    prompt: str
    options: dict[str, Any]
    optional: bool = False


Call = SessionCall | RetrieveCall | GenerateCall


@dataclass(frozen=True)
class AnswerPolicy:
    """How strict grounded answers are (from OdinSettings)."""

    min_score: float
    max_sources: int
    max_citations: int
    min_support: float
    max_tokens: int
    query_variants: int
    rewrite_followups: bool
    model_abstains: bool = True


@dataclass(frozen=True)
class AskOptions:
    """One ``ask``'s arguments."""

    top_k: int = 0
    filters: Any = None
    mode: str = ""
    tenant_id: str | None = None
    model: str = ""
    max_tokens: int | None = None
    session_id: str = ""
    owner_id: str = ""
    retrieve_extra: dict[str, Any] = field(default_factory=dict)
    # Earlier turns kept by the caller (e.g. an OpenAI-style messages list) when there is no session.
    history: tuple[common_pb2.ChatTurn, ...] = ()


def answer_policy(settings: OdinSettings) -> AnswerPolicy:
    """The policy OdinSettings describe."""
    return AnswerPolicy(min_score=settings.answer_min_score, max_sources=settings.answer_max_sources,
                        max_citations=settings.answer_max_citations,
                        min_support=settings.answer_min_support, max_tokens=settings.answer_max_tokens,
                        query_variants=settings.query_variants, rewrite_followups=settings.rewrite_followups,
                        model_abstains=settings.answer_model_abstains)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def grounded_ask(question: str, opts: AskOptions, policy: AnswerPolicy) -> Generator[Call, Any, Answer]:
    """The flow (see the module docstring)."""
    start = time.perf_counter()
    query = question
    gen_opts = {"tenant_id": opts.tenant_id, "model": opts.model, "temperature": 0.0}
    if (opts.session_id or opts.history) and policy.rewrite_followups:
        if opts.session_id:
            session = yield SessionCall(opts.session_id, opts.tenant_id)
            turns = history_turns(session) if session is not None else []
        else:
            turns = list(opts.history)
        if turns:
            rewrite: Generation | None = yield GenerateCall(question, {
                **gen_opts, "json_schema": REWRITE_SCHEMA, "system_prompt": REWRITE_SYSTEM, "messages": turns,
                "max_tokens": 80}, optional=True)
            query = parse_rewrite(rewrite.json, question) if rewrite is not None else question
    variants: list[str] = []
    if policy.query_variants:
        asked: Generation | None = yield GenerateCall(query, {
            **gen_opts, "json_schema": variants_schema(policy.query_variants), "system_prompt": VARIANTS_SYSTEM,
            "max_tokens": 40 * policy.query_variants}, optional=True)
        variants = parse_variants(asked.json, query, policy.query_variants) if asked is not None else []
    retrieval: Retrieval = yield RetrieveCall(query, tuple(variants), {
        "top_k": opts.top_k, "filters": opts.filters, "mode": opts.mode, "tenant_id": opts.tenant_id,
        **opts.retrieve_extra})
    retrieve_ms = _ms(start)
    relevant = [s for s in retrieval.sources if s.score >= policy.min_score][: policy.max_sources]
    common: dict[str, Any] = {"question": question, "sources": retrieval.sources, "used_context": bool(relevant),
                              "query": query, "query_variants": variants, "session_id": opts.session_id}
    if not relevant:
        best = max((s.score for s in retrieval.sources), default=0.0)
        reason = (f"no source is relevant enough: the best of {len(retrieval.sources)} scored {best:.3f}, "
                  f"below answer_min_score {policy.min_score:.3f}" if retrieval.sources
                  else f"found nothing relevant: {retrieval.below_threshold} match(es) scored below Freki's "
                  f"threshold {retrieval.score_threshold:.2f}" if retrieval.nothing_relevant
                  else "retrieval found no source")
        return Answer(text="", timings=Timings(retrieve_ms, 0.0, _ms(start)), generation=None, answered=False,
                      reason=reason, confidence=0.0, **common)
    by_chunk = {d.chunk_id: d for d in retrieval.context.documents}
    kept = common_pb2.RAGContext(documents=[by_chunk[s.chunk_id] for s in relevant],
                                 retrieval_score=retrieval.retrieval_score)
    numbered, context = number_sources(relevant, kept)
    gen_start = time.perf_counter()
    schema = answer_schema(numbered, max_citations=policy.max_citations, model_abstains=policy.model_abstains)
    generation: Generation = yield GenerateCall(question, {
        **gen_opts, "context": context, "json_schema": schema, "system_prompt": system_prompt(policy.model_abstains),
        "session_id": opts.session_id, "owner_id": opts.owner_id, "max_tokens": opts.max_tokens or policy.max_tokens})
    verdict = ground(json.loads(generation.json), numbered, min_support=policy.min_support)
    return Answer(text=verdict.text, timings=Timings(retrieve_ms, _ms(gen_start), _ms(start)), generation=generation,
                  answered=verdict.answered, reason=verdict.reason, summary=verdict.summary,
                  key_details=verdict.key_details, citations=verdict.citations, confidence=verdict.confidence,
                  extractive=verdict.extractive,
                  **common)


def _optional_failed(call: object, exc: OdinError) -> None:
    if not (isinstance(call, GenerateCall) and call.optional):
        raise exc
    log.warning("optional generation failed, going on without it: %s", exc)


def drive(flow: Generator[C, Any, T], perform: Callable[[C], Any]) -> T:
    """Run a flow with blocking calls."""
    try:
        call = next(flow)
        while True:
            try:
                result = perform(call)
            except OdinError as exc:
                _optional_failed(call, exc)
                result = None
            call = flow.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def drive_async(flow: Generator[C, Any, T], perform: Callable[[C], Awaitable[Any]]) -> T:
    """Run a flow with awaited calls."""
    try:
        call = next(flow)
        while True:
            try:
                result = await perform(call)
            except OdinError as exc:
                _optional_failed(call, exc)
                result = None
            call = flow.send(result)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
