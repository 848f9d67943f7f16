"""The grounded ``ask`` as one sans-IO flow (:mod:`odin_client.protocol.flows`), run by both clients.

:func:`prepare` yields the calls before the answer: in a conversation (``session_id`` or caller-kept
``history``) or with ``query_variants``, Geri's RewriteQuery turns the question into a standalone query
(and paraphrases) — optional: when it fails the question is searched as asked; then Freki retrieves.
It returns the :class:`Prepared` AnswerRequest; the client sends it as Answer (unary) or AnswerStream and
:func:`finish` turns Geri's AnswerResponse into the :class:`~odin_client.types.results.Answer` callers know.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from wolf.v1 import common_pb2, geri_pb2

from odin_client.protocol import messages
from odin_client.protocol.specs import Took
from odin_client.settings import OdinSettings
from odin_client.types.results import Answer, Citation, Generation, Retrieval, Timings, generation_from_proto

log = logging.getLogger("odin_client.asking")


@dataclass(frozen=True)
class AskOptions:
    """One ``ask``'s arguments (``tenant_id`` already resolved to the call's tenant)."""

    tenant_id: str
    top_k: int = 0
    filters: Any = None
    mode: str = ""
    model: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    session_id: str = ""
    owner_id: str = ""
    # Earlier turns kept by the caller (e.g. an OpenAI-style messages list) when there is no session.
    history: tuple[common_pb2.ChatTurn, ...] = ()


@dataclass(frozen=True)
class RewriteCall:
    """GeriService.RewriteQuery; optional: a failure sends back None."""

    request: geri_pb2.RewriteQueryRequest
    optional: bool = True


@dataclass(frozen=True)
class RetrieveCall:
    """FrekiService.RetrieveContext for ``query`` and its variants (``options``: ``retrieve``'s arguments)."""

    query: str
    variants: tuple[str, ...]
    options: dict[str, Any]


Call = RewriteCall | RetrieveCall


@dataclass(frozen=True)
class Prepared:
    """Everything before the answer: what was searched, what was found, and the request for Geri."""

    question: str
    query: str
    variants: list[str]
    retrieval: Retrieval
    request: geri_pb2.AnswerRequest
    session_id: str
    started: float  # perf_counter() when ask began
    retrieve_ms: float


def answer_options(settings: OdinSettings) -> geri_pb2.AnswerOptions:
    """The AnswerOptions of a client's ``answer_*`` settings: only those set (None leaves Geri's own)."""
    options = geri_pb2.AnswerOptions()
    for field, value in (("min_score", settings.answer_min_score), ("max_sources", settings.answer_max_sources),
                         ("max_citations", settings.answer_max_citations),
                         ("min_support", settings.answer_min_support),
                         ("model_abstains", settings.answer_model_abstains)):
        if value is not None:
            setattr(options, field, value)
    return options


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def prepare(question: str, opts: AskOptions, settings: OdinSettings) -> Generator[Call, Any, Prepared]:
    """The flow (see the module docstring)."""
    start = time.perf_counter()
    query, variants = question, []
    conversation = bool(opts.session_id or opts.history) and settings.rewrite_followups
    if conversation or settings.query_variants:
        rewritten: geri_pb2.RewriteQueryResponse | None = yield RewriteCall(messages.rewrite_request(
            question, tenant_id=opts.tenant_id, variants=settings.query_variants, model=opts.model,
            session_id=opts.session_id if conversation else "", history=opts.history if conversation else ()))
        if rewritten is not None:
            query = rewritten.query.strip() or question
            variants = [v for v in rewritten.variants if v.strip()][: settings.query_variants]
            for warning in rewritten.warnings:
                log.warning("Geri RewriteQuery: %s", warning)
    retrieval: Retrieval = yield RetrieveCall(query, tuple(variants), {
        "top_k": opts.top_k, "filters": opts.filters, "mode": opts.mode, "tenant_id": opts.tenant_id})
    request = messages.answer_request(
        question, retrieval.context, tenant_id=opts.tenant_id, options=answer_options(settings), model=opts.model,
        max_tokens=opts.max_tokens or settings.answer_max_tokens, temperature=opts.temperature,
        session_id=opts.session_id, owner_id=opts.owner_id)
    request.queries_used.extend(dict.fromkeys([question, query, *variants]))  # Geri reports them
    return Prepared(question, query, variants, retrieval, request, opts.session_id, start, _ms(start))


def citation_from_proto(cite: geri_pb2.Citation) -> Citation:
    """One checked citation of Geri's answer."""
    return Citation(marker=cite.marker, document_id=cite.document_id, chunk_id=cite.chunk_id,
                    chunk_index=cite.chunk_index, title=cite.title or cite.document_id,
                    score=round(float(cite.score), 4), quote=cite.quote, location=cite.location.label)


def _generation(resp: geri_pb2.AnswerResponse, elapsed_ms: float, attempts: int) -> Generation | None:
    if not resp.HasField("llm_response"):
        return None  # Geri abstained before asking the model
    return generation_from_proto(common_pb2.WolfResponse(llm_response=resp.llm_response, metadata=resp.metadata),
                                 elapsed_ms=elapsed_ms, attempts=attempts)


def finish(prepared: Prepared, resp: geri_pb2.AnswerResponse, took: Took) -> Answer:
    """The :class:`Answer` of Geri's response, ``took`` the attempts and time of the Answer call."""
    grounded = resp.answer
    generate_ms, attempts = took.elapsed_ms, took.attempts
    return Answer(
        question=prepared.question, text=grounded.text, sources=prepared.retrieval.sources,
        timings=Timings(prepared.retrieve_ms, generate_ms, _ms(prepared.started)),
        generation=_generation(resp, generate_ms, attempts), used_context=grounded.sources_used > 0,
        answered=grounded.answered, reason=grounded.reason, summary=grounded.summary,
        key_details=list(grounded.key_details), citations=[citation_from_proto(c) for c in grounded.citations],
        confidence=round(float(grounded.confidence), 4), extractive=grounded.extractive, revised=grounded.revised,
        query=prepared.query, query_variants=prepared.variants, session_id=prepared.session_id,
        report=_report(resp))


def _report(resp: geri_pb2.AnswerResponse) -> dict[str, Any]:
    """What Geri reports besides the answer, as JSON (proto field names)."""
    keep = geri_pb2.AnswerResponse(documents=resp.documents, retrieval=resp.retrieval, fallbacks=resp.fallbacks,
                                   cache_hit=resp.cache_hit)
    return json_format.MessageToDict(keep, preserving_proto_field_name=True)
