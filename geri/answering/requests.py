"""Check an AnswerRequest or RewriteQueryRequest and build the generation requests behind it.

Every rejection is an ``InvalidArgument`` naming the field as the caller sees it (``request.context.
documents[2].content is empty``, ``options.min_score …``). The answer's own instructions, schema and
numbered context are Geri's: a caller's json_schema, tools, tool_choice, system_prompt or stop sequences
would change what a grounded answer is, so they are refused rather than ignored.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from wolf.v1 import common_pb2, geri_pb2

from geri.answering.schema import answer_schema, system_prompt
from geri.answering.sources import NumberedSource, number_sources
from geri.settings import AnsweringSettings, GeriSettings
from geri.structured.contract import OutputContract
from geri.validation import ValidatedRequest, model_type_name, validate_request
from wolf_service.errors import InvalidArgument

_OPTION_FIELDS = ("min_score", "max_sources", "max_citations", "min_support", "model_abstains")
# Geri's own parts of a grounded answer: a caller may not set them.
_RESERVED = ("json_schema", "system_prompt", "tool_choice")


@dataclass(frozen=True)
class AnswerPolicy:
    """How strict one grounded answer is: the ``answering`` settings with the request's options applied."""

    min_score: float
    max_sources: int
    max_citations: int
    min_support: float
    model_abstains: bool
    max_tokens: int


def answer_policy(settings: AnsweringSettings, options: geri_pb2.AnswerOptions) -> AnswerPolicy:
    """The policy for ``options`` (unset fields take ``settings``), checked against the settings' bounds."""
    overrides = {name: getattr(options, name) for name in _OPTION_FIELDS if options.HasField(name)}
    try:
        merged = AnsweringSettings.model_validate({**settings.model_dump(), **overrides})
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"])
        raise InvalidArgument(f"options.{name}: {error['msg']} (got {error.get('input')!r})") from None
    return AnswerPolicy(min_score=merged.min_score, max_sources=merged.max_sources,
                        max_citations=merged.max_citations, min_support=merged.min_support,
                        model_abstains=merged.model_abstains, max_tokens=merged.max_tokens)


def has_text(text: str) -> bool:
    """Whether ``text`` holds a character that shows: not whitespace, a control or format character (zero-width
    space, BOM, direction marks), nor unassigned — a chunk of only those has nothing a sentence could quote."""
    return any(not ch.isspace() and unicodedata.category(ch)[0] not in "CZ" for ch in text)


def check_request(request: common_pb2.WolfRequest, settings: GeriSettings, *, what: str) -> ValidatedRequest:
    """The nested WolfRequest, validated as for Generate (model_type may be left unset) and for a grounded
    call: a question, no caller-set instructions, schema, tools or stops, and usable context documents.

    Args:
        what: What the prompt is, for the error ("the question", "the follow-up question").
    """
    if request.model_type not in (common_pb2.MODEL_TYPE_UNSPECIFIED, common_pb2.LLM):
        got = model_type_name(request.model_type)
        raise InvalidArgument(f"request.model_type must be LLM or unset (got {got})")
    if not has_text(request.prompt):
        raise InvalidArgument(f"request.prompt must be non-empty: it is {what} (whitespace, control and invisible "
                              "format characters are not text)")
    gen = request.generation
    for name in _RESERVED:
        if getattr(gen, name).strip():
            raise InvalidArgument(f"request.generation.{name} must be empty: a grounded answer has its own")
    if gen.tools:
        raise InvalidArgument("request.generation.tools must be empty: a grounded answer calls no tools")
    if gen.stop:
        raise InvalidArgument("request.generation.stop must be empty: a stop sequence would cut the answer's JSON")
    threshold = request.context.score_threshold
    if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
        raise InvalidArgument(f"request.context.score_threshold must be in [0, 1] (got {threshold})")
    if request.context.below_threshold < 0:
        raise InvalidArgument(f"request.context.below_threshold must not be negative (got "
                              f"{request.context.below_threshold})")
    for i, doc in enumerate(request.context.documents):
        field = f"request.context.documents[{i}]"
        if not doc.document_id.strip():
            raise InvalidArgument(f"{field}.document_id must be non-empty: a citation names it")
        if not has_text(doc.content):
            raise InvalidArgument(f"{field}.content is empty: every context document needs its text (whitespace, "
                                  "control and invisible format characters are not text)")
        score = doc.relevance_score
        if not math.isfinite(score) or not 0.0 <= score <= 1.0:
            raise InvalidArgument(f"{field}.relevance_score must be in [0, 1] (got {score})")
    copy = common_pb2.WolfRequest()
    copy.CopyFrom(request)
    copy.model_type = common_pb2.LLM
    copy.ClearField("context")  # checked above; the prompt is built from the chosen sources only
    try:
        return validate_request(copy, settings)
    except InvalidArgument as exc:
        raise InvalidArgument(f"request.{exc}") from None


def choose_sources(context: common_pb2.RAGContext, policy: AnswerPolicy) -> list[common_pb2.RetrievedDocument]:
    """The documents shown to the model: those reaching ``min_score``, best first, at most ``max_sources``.

    Best first also makes the window fitting (which drops the lowest-scored documents first) drop from the
    end, so the numbers the model sees stay the numbers the schema knows.
    """
    ranked = sorted(context.documents, key=lambda d: -d.relevance_score)  # stable: equal scores keep their order
    return [d for d in ranked if d.relevance_score >= policy.min_score][: policy.max_sources]


def gate_reason(context: common_pb2.RAGContext, policy: AnswerPolicy) -> str:
    """Why no source was shown to the model (the abstention before any generation)."""
    docs = context.documents
    if docs:
        best = max(d.relevance_score for d in docs)
        return (f"no source is relevant enough: the best of {len(docs)} scored {best:.3f}, below min_score "
                f"{policy.min_score:.3f}")
    if context.below_threshold:
        return (f"found nothing relevant: {context.below_threshold} match(es) scored below the retrieval "
                f"threshold {context.score_threshold:.2f}")
    return "the context has no documents"


def answer_generation(request: common_pb2.WolfRequest, sources: list[common_pb2.RetrievedDocument],
                      policy: AnswerPolicy
                      ) -> tuple[list[NumberedSource], common_pb2.WolfRequest, Callable[[int], OutputContract]]:
    """The numbered sources, the generation request that asks for a cited answer over them, and the answer's
    contract when the window keeps only the first ``k`` of them (``GenerationPipeline.run``'s ``grounded``)."""
    numbered, context = number_sources(sources)
    # The window fitting gives up the lowest-scored documents first, and the schema's numbers stay the prompt's
    # only while it gives them up from the end: after the source rerank the order is no longer by score, so
    # each document the model is shown scores at most as its predecessor (equal scores: the later one goes).
    ceiling = 1.0
    for shown in context.documents:
        ceiling = shown.relevance_score = min(shown.relevance_score, ceiling)
    schema = answer_schema(numbered, max_citations=policy.max_citations, model_abstains=policy.model_abstains)
    inner = common_pb2.WolfRequest()
    inner.CopyFrom(request)
    inner.model_type = common_pb2.LLM
    inner.context.CopyFrom(context)
    inner.generation.json_schema = json.dumps(schema)
    inner.generation.system_prompt = system_prompt(policy.model_abstains)
    if not inner.metadata.HasField("max_tokens"):
        inner.metadata.max_tokens = policy.max_tokens
    if not inner.metadata.HasField("temperature"):
        inner.metadata.temperature = 0.0  # the answer is a choice of evidence, not creative writing
    return numbered, inner, kept_sources_contract(numbered, policy)


def kept_sources_contract(numbered: Sequence[NumberedSource], policy: AnswerPolicy
                          ) -> Callable[[int], OutputContract]:
    """The answer's contract when the window keeps only the first ``k`` of ``numbered`` (it drops the last):
    a schema that admits citations of those alone."""
    def contract(kept: int) -> OutputContract:
        return OutputContract(schema=answer_schema(numbered[:kept], max_citations=policy.max_citations,
                                                   model_abstains=policy.model_abstains))
    return contract


def side_generation(request: common_pb2.WolfRequest, prompt: str, *, schema: dict[str, Any], system: str,
                    max_tokens: int, turns: Sequence[common_pb2.ChatTurn] = ()) -> common_pb2.WolfRequest:
    """A rewrite or variants generation for ``request``'s caller: same tenant and model, greedy, not stored."""
    return common_pb2.WolfRequest(
        request_id=request.request_id, model_type=common_pb2.LLM, prompt=prompt, tenant_id=request.tenant_id,
        metadata=common_pb2.RequestMetadata(max_tokens=max_tokens, temperature=0.0,
                                            language=request.metadata.language),
        generation=common_pb2.GenerationOptions(model=request.generation.model, json_schema=json.dumps(schema),
                                                system_prompt=system, messages=turns))
