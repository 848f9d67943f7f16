"""Answer, AnswerStream and RewriteQuery: grounded answers on top of the generation pipeline.

An answer: check the request → choose the sources (``min_score``, ``max_sources``) → reorder them by the
model's question likelihood (``source_reranker``) → none left, or the first does not say what the question
asks (``min_evidence``, geri/answering/evidence.py): abstain without a generation → else number them and ask
the model for JSON under the answer schema, through :class:`~geri.generation.GenerationPipeline` (model list
and fallback, window fitting that drops the lowest-scored sources first, the session's history, cancellation)
→ ground the reply (with ``short_answers``, its text becomes the phrase of the cited source that answers:
geri/answering/spans.py). With a ``metadata.session_id`` the turn stored is the question and the answer's text
— or, for an abstention, its reason — never the JSON. Every reply reports the context per document, the
retrieval behind it and the fallbacks that ran (geri/answering/report.py); a repeated question is answered
from the answer cache (geri/answering/cache.py) without a generation, and its turn is stored all the same.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, replace
from typing import Literal

from wolf.v1 import common_pb2, geri_pb2

from geri.answering import report
from geri.answering.answer_text import DraftText
from geri.answering.cache import AnswerCache, answer_key
from geri.answering.evidence import document_language, evidence_reason, may_pass_after_rerank
from geri.answering.grounding import abstention, ground
from geri.answering.queries import (
    REWRITE_MAX_TOKENS,
    REWRITE_SCHEMA,
    REWRITE_SYSTEM,
    VARIANT_MAX_TOKENS,
    VARIANTS_SYSTEM,
    grounded_rewrite,
    history_turns,
    parse_rewrite,
    parse_variants,
    variants_schema,
)
from geri.answering.requests import (
    answer_generation,
    answer_policy,
    check_request,
    choose_sources,
    gate_reason,
    side_generation,
)
from geri.answering.source_rerank import in_english, rerank_sources
from geri.backends.base import ContinuationScorer, holding
from geri.generation import GenerationPipeline
from geri.prompting import ContextDoesNotFit
from geri.routing import FALLBACK_ERRORS
from geri.sessions import SessionStore, Turn
from geri.sessions.store import SessionRecord, check_owner
from geri.settings import AnsweringSettings, GeriSettings
from geri.validation import MAX_PROMPT_CHARS, ValidatedRequest
from wolf_service.errors import Cancelled, InvalidArgument


@dataclass(frozen=True)
class AnswerStep:
    """What :meth:`AnswerPipeline.answer` emits: provisional answer text, then the final response (last)."""

    kind: Literal["text", "final"]
    text: str = ""
    response: geri_pb2.AnswerResponse | None = None


class AnswerPipeline:
    """Grounded answers and query rewrites over the generation pipeline."""

    def __init__(self, settings: GeriSettings, generation: GenerationPipeline, sessions: SessionStore) -> None:
        self._settings = settings
        self._generation = generation
        self._sessions = sessions
        self._cache = AnswerCache(settings.answer_cache)

    def answer(self, request: geri_pb2.AnswerRequest, cancel: threading.Event, *, stream: bool = False,
               user: str = "") -> Generator[AnswerStep, None, None]:
        """The grounded answer to ``request`` (with ``stream``, preceded by the answer text as it is written).

        ``user`` is the caller's validated ``x-wolf-user`` ("" without one): the session is this user's own.

        Raises:
            InvalidArgument: a field is wrong (named), or the question alone does not fit the window.
            PermissionDenied: the caller's session belongs to another data owner.
            Cancelled: the client went away.
            FailedPrecondition / Unavailable / DeadlineExceeded: no backend of the model list could answer.
        """
        started = time.monotonic()
        outer = request.request
        req = replace(check_request(outer, self._settings, what="the question"), user_id=user)
        # One snapshot per request: a hot reload replaces the answering settings, and an answer must be made
        # with the settings its cache key holds.
        answering = self._settings.answering
        report.check_queries(request, max_queries=answering.max_queries_used, max_chars=MAX_PROMPT_CHARS)
        policy = answer_policy(answering, request.options)
        sources = choose_sources(outer.context, policy)
        # The backend that will answer scores when it can, else the scoring_model entry beside it.
        scoring = self._generation.named_scorer(answering.scoring_model)
        reranker = (self._generation.first_scorer(outer.generation.model.strip()) or scoring) \
            if answering.source_reranker == "model" else None
        ranked = sorted(outer.context.documents, key=lambda d: -d.relevance_score)
        unsupported = evidence_reason(outer.prompt, ranked, min_score=policy.min_score,
                                      settings=answering) if sources else ""
        if reranker is not None and not in_english(sources, answering.rerank_margin):
            reranker = None  # its prompt is English: other languages keep Freki's order and min_evidence
        if unsupported and reranker is not None:  # the gate decides on the source the rerank puts first, below
            unsupported = "" if may_pass_after_rerank(outer.prompt, sources, min_score=policy.min_score,
                                                      settings=answering, margin=answering.rerank_margin) \
                else evidence_reason(outer.prompt, sources, min_score=policy.min_score, settings=answering,
                                     reranked=True)  # none near could pass: the reason names the floor held to
        if not sources or unsupported:
            yield self._abstained(req, request, unsupported or gate_reason(outer.context, policy), started)
            return
        # Keyed on Freki's order: the rerank below follows from what the key holds, so a hit skips it.
        key = self._cache_key(req, outer, policy, sources, answering) if self._cache.enabled else ""
        if key and (cached := self._cache.get(req.tenant, outer.context.index_epoch, key)) is not None:
            check_owner(self._session(req), req.owner_id)
            grounded, llm, fallbacks = cached.response()
            if stream and grounded.answered:
                yield AnswerStep("text", grounded.text)
            self._remember(req, grounded)
            hit = report.complete(geri_pb2.AnswerResponse(
                request_id=req.request_id, answer=grounded, llm_response=llm, metadata=_metadata(started),
                cache_hit=True), request, shown=cached.shown, ran=fallbacks)
            yield AnswerStep("final", response=hit)
            return
        if reranker is not None:  # before numbering: the model cites its first source most often
            sources = rerank_sources(outer.prompt, sources, reranker, answering.rerank_margin, cancel)
            # The gate judges the source the model is shown first (decision 0410).
            unsupported = evidence_reason(outer.prompt, sources, min_score=policy.min_score, settings=answering,
                                          reranked=True)
            if unsupported:
                yield self._abstained(req, request, unsupported, started)
                return
        numbered, inner, kept_contract = answer_generation(outer, sources, policy)
        drafts = DraftText()
        final: common_pb2.WolfResponse | None = None
        backends: tuple[tuple[str, str], ...] = ()
        answerer: ContinuationScorer | None = None  # the backend that answered when it can score, else scoring
        try:
            for event in self._generation.run(inner, cancel, remember=False, drafts=stream, user=user,
                                              grounded=kept_contract):
                if event.kind == "draft" and (delta := drafts.feed(event.text)):
                    yield AnswerStep("text", delta)
                elif event.kind == "draft_reset":
                    drafts.reset()
                elif event.kind == "final":
                    final, backends, answerer = event.response, event.fallbacks, event.scorer or scoring
        except ContextDoesNotFit as exc:  # found before the model runs: nothing it could cite would be shown
            yield self._abstained(req, request, str(exc), started)
            return
        llm = final.llm_response if final is not None else None
        if final is None or llm is None or llm.finish_reason == "cancelled" or cancel.is_set():
            raise Cancelled(f"the answer to request {req.request_id} was cancelled")
        # Sources dropped to fit the window are the last ones (best first): the model did not see them.
        shown = numbered[: len(numbered) - len(final.metadata.dropped_document_ids)]
        # The sentence and span scores of an English answer queue for the model once, together.
        scores = answering.short_answers and "model" in (answering.span_scorer, answering.sentence_chooser) \
            and any(document_language(s.document) == "en" for s in shown)
        with holding(answerer if scores else None, cancel):
            grounded = ground(json.loads(llm.json), shown, min_support=policy.min_support, question=outer.prompt,
                              short_answers=answering.short_answers,
                              scorer=answerer if answering.span_scorer == "model" else None,
                              sentence_scorer=answerer if answering.sentence_chooser == "model" else None,
                              cancel=cancel)
        if cancel.is_set():  # the caller left while the model scored the short answer: nothing to store or keep
            raise Cancelled(f"the answer to request {req.request_id} was cancelled")
        grounded.sources_used = len(shown)
        if stream:
            tail, grounded.revised = drafts.finish(grounded.text)
            if tail:
                yield AnswerStep("text", tail)
        self._remember(req, grounded)
        metadata = common_pb2.ResponseMetadata()
        metadata.CopyFrom(final.metadata)
        metadata.duration_ms = int((time.monotonic() - started) * 1000)
        response = report.complete(geri_pb2.AnswerResponse(
            request_id=req.request_id, answer=grounded, llm_response=llm, metadata=metadata), request,
            shown=(s.document.document_id for s in shown), backends=backends, llm=llm, metadata=metadata)
        # A degraded answer is not kept: the first backend failed, or no model could score as scoring_model asks.
        if key and not backends and (answerer is not None or not answering.scoring_model):
            kept = geri_pb2.GroundedAnswer()
            kept.CopyFrom(grounded)
            kept.revised = False  # a hit streams the checked text itself
            self._cache.put(req.tenant, outer.context.index_epoch, key, kept, _spent_nothing(llm),
                            [f for f in response.fallbacks if f.kind != geri_pb2.FALLBACK_KIND_REVISION],
                            [s.document.document_id for s in shown])
        yield AnswerStep("final", response=response)

    def rewrite(self, request: geri_pb2.RewriteQueryRequest, cancel: threading.Event, *, user: str = ""
                ) -> geri_pb2.RewriteQueryResponse:
        """The standalone query for a follow-up (in ``user``'s session), and paraphrases of it when asked.

        The rewrite and the variants are optional: when their generation fails the question is kept and a
        warning says why.

        Raises:
            InvalidArgument: a field is wrong, or more variants than ``answering.max_query_variants``.
            PermissionDenied: the caller's session belongs to another data owner.
        """
        outer = request.request
        req = replace(check_request(outer, self._settings, what="the follow-up question"), user_id=user)
        limit = self._settings.answering.max_query_variants
        if not 0 <= request.variants <= limit:
            raise InvalidArgument(f"variants must be in [0, {limit}] (answering.max_query_variants; "
                                  f"got {request.variants})")
        keep = self._settings.answering.history_turns
        if req.session_id:
            record = self._session(req)
            check_owner(record, req.owner_id)
            turns = history_turns(record.turns, keep) if record else []
        else:
            turns = history_turns(outer.generation.messages, keep)
        question = outer.prompt.strip()
        reply = geri_pb2.RewriteQueryResponse(request_id=req.request_id, query=question)
        if turns:
            rewritten = self._optional(reply, "the rewrite", cancel, side_generation(
                outer, question, schema=REWRITE_SCHEMA, system=REWRITE_SYSTEM, max_tokens=REWRITE_MAX_TOKENS,
                turns=turns))
            reply.query = parse_rewrite(rewritten, question) if rewritten is not None else question
            reply.query, unused = grounded_rewrite(reply.query, question, turns, outer.metadata.language or "en")
            if unused:
                reply.warnings.append(unused)
        reply.rewritten = reply.query != question
        if request.variants:
            asked = self._optional(reply, "the query variants", cancel, side_generation(
                outer, reply.query, schema=variants_schema(request.variants), system=VARIANTS_SYSTEM,
                max_tokens=VARIANT_MAX_TOKENS * request.variants))
            if asked is not None:
                reply.variants.extend(parse_variants(asked, reply.query, request.variants))
        return reply

    def _optional(self, reply: geri_pb2.RewriteQueryResponse, what: str, cancel: threading.Event,
                  inner: common_pb2.WolfRequest) -> str | None:
        """The JSON of an optional generation, or None with a warning on ``reply`` when no backend could do it."""
        try:
            for event in self._generation.run(inner, cancel, remember=False):
                if event.response is not None:
                    reply.warnings.extend(event.response.metadata.warnings)
                    if event.response.llm_response.finish_reason == "cancelled":
                        raise Cancelled(f"request {inner.request_id} was cancelled")
                    return event.response.llm_response.json
        except FALLBACK_ERRORS as exc:
            reply.warnings.append(f"{what} failed, the question was kept: {str(exc)[:300]}")
        return None

    def forget_tenant(self, tenant: str) -> None:
        """Drop ``tenant``'s cached answers (an erasure in it)."""
        self._cache.drop_tenant(tenant)

    def settings_reloaded(self, changed: set[str], live: GeriSettings) -> None:
        """A settings reload hook: reloaded ``answer_cache`` settings apply to the cache at once."""
        if any(name == "answer_cache" or name.startswith("answer_cache.") for name in changed):
            self._cache.configure(live.answer_cache)

    def _abstained(self, req: ValidatedRequest, request: geri_pb2.AnswerRequest, reason: str,
                   started: float) -> AnswerStep:
        """The final step of an abstention for ``reason``, decided before any generation (the turn is stored)."""
        check_owner(self._session(req), req.owner_id)
        grounded = abstention(reason)
        self._remember(req, grounded)
        return AnswerStep("final", response=report.complete(geri_pb2.AnswerResponse(
            request_id=req.request_id, answer=grounded, metadata=_metadata(started)), request, shown=()))

    def _cache_key(self, req: ValidatedRequest, outer: common_pb2.WolfRequest, policy: object,
                   sources: list[common_pb2.RetrievedDocument], answering: AnsweringSettings) -> str:
        """The answer cache's key: the conversation the model would see and the request's ``answering``
        settings are part of it."""
        record = self._session(req)
        history = [*(record.turns if record else ()), *outer.generation.messages]
        settings_json = (f"{answering.model_dump_json()}|{self._settings.sessions.history_tokens}"
                         f"|{self._settings.context_metadata.model_dump_json()}")
        turns = [(t.role, t.content, t.tool_call_id, [str(c) for c in t.tool_calls]) for t in history]
        return answer_key(tenant=req.tenant, user=req.user_id, request=outer, policy=policy,
                          settings_json=settings_json, shown=sources, history=turns)

    def _session(self, req: ValidatedRequest) -> SessionRecord | None:
        return self._sessions.get(req.tenant, req.session_id, user=req.user_id) if req.session_id else None

    def _remember(self, req: ValidatedRequest, grounded: geri_pb2.GroundedAnswer) -> None:
        """Store the exchange: the caller's turns, the question, the answer text (or the abstention's reason)."""
        if not req.session_id:
            return
        turns = [Turn(m.role, m.content, m.tool_calls, m.tool_call_id) for m in req.messages]
        turns.append(Turn("user", req.prompt))
        turns.append(Turn("assistant", grounded.text if grounded.answered else grounded.reason))
        self._sessions.append(req.tenant, req.session_id, req.owner_id, turns, user=req.user_id)


def _spent_nothing(llm: common_pb2.LLMResponse) -> common_pb2.LLMResponse:
    """``llm`` as a cache hit reports it: the model and its reply, no tokens or time spent."""
    copy = common_pb2.LLMResponse()
    copy.CopyFrom(llm)
    for name in ("tokens_used", "prompt_tokens", "completion_tokens", "latency_ms", "cost"):
        copy.ClearField(name)
    return copy


def _metadata(started: float) -> common_pb2.ResponseMetadata:
    metadata = common_pb2.ResponseMetadata(duration_ms=int((time.monotonic() - started) * 1000))
    metadata.timestamp.GetCurrentTime()
    return metadata
