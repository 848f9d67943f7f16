"""The JSON schema of a grounded answer for one set of sources.

Two shapes, both starting with ``answered``: the model first decides whether the sources answer the
question. ``false`` allows only a short ``reason`` (an abstention costs a few tokens, and a degenerate
reply cannot run past the token limit there); ``true`` requires at least one citation, then the answer —
so the answer is written with its evidence already chosen.
Each citation is ``{"source": N, "sentence": K}`` and the schema admits only pairs that exist, so the
model (constrained decoding) cannot cite a document it was not given or a sentence that is not there.
The string caps keep the longest possible reply (~250 tokens with the whitespace some engines allow)
inside ``answering.max_tokens``: a reply cut off at the token limit is not JSON. Numbers are enums, not
``minimum``/``maximum``: every engine enforces enums (llama.cpp's schema-to-grammar conversion ignores
numeric bounds), and Geri's validation would reject a bound the engine did not keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from geri.answering.sources import NumberedSource

SYSTEM_PROMPT = (
    "You answer questions using only the numbered sources. Each source is a document whose sentences are "
    "numbered (1), (2), .... Reply in JSON. First set \"answered\" to true only if a sentence of the sources "
    "states the answer; otherwise set it to false, cite nothing and say why in \"reason\". Cite the sentences "
    "that state the answer as {\"source\": N, \"sentence\": K}. Then give the answer in a few words, with "
    "markers [1], [2] pointing to your citations in order, a one-sentence summary, up to two key details, and "
    "your confidence between 0 and 1."
)


# When the retrieval gate alone decides whether to answer (answering.model_abstains false): the model must cite.
SYSTEM_PROMPT_MUST_ANSWER = (
    "You answer questions using only the numbered sources. Each source is a document whose sentences are "
    "numbered (1), (2), .... Reply in JSON. Cite the sentence that states the answer as "
    "{\"source\": N, \"sentence\": K}. Then give the answer in a few words, with markers [1], [2] pointing to "
    "your citations in order, a one-sentence summary, up to two key details, and your confidence between 0 and 1."
)


def system_prompt(model_abstains: bool) -> str:
    """The instructions that go with :func:`answer_schema` of the same ``model_abstains``."""
    return SYSTEM_PROMPT if model_abstains else SYSTEM_PROMPT_MUST_ANSWER


CONFIDENCE = [round(i / 10, 1) for i in range(11)]


def answer_schema(sources: Sequence[NumberedSource], *, max_citations: int = 3,
                  model_abstains: bool = True) -> dict[str, Any]:
    """The schema for answers grounded in ``sources`` (non-empty); without ``model_abstains`` only the
    cited-answer shape (the retrieval gate has already decided that the sources are relevant)."""
    citation = {"anyOf": [
        {"type": "object", "additionalProperties": False, "required": ["source", "sentence"],
         "properties": {"source": {"const": s.index}, "sentence": {"enum": list(range(1, len(s.sentences) + 1))}}}
        for s in sources
    ]}
    silent = {
        "type": "object",
        "additionalProperties": False,
        "required": ["answered", "reason"],
        "properties": {"answered": {"const": False}, "reason": {"type": "string", "maxLength": 60}},
    }
    answer = {
        "type": "object",
        "additionalProperties": False,
        "required": ["answered", "citations", "answer", "summary", "key_details", "confidence"],
        "properties": {
            "answered": {"const": True},
            "citations": {"type": "array", "minItems": 1, "maxItems": max_citations, "items": citation},
            "answer": {"type": "string", "maxLength": 160},
            "summary": {"type": "string", "maxLength": 100},
            "key_details": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 60}},
            "confidence": {"enum": CONFIDENCE},
        },
    }
    return {"anyOf": [answer, silent]} if model_abstains else answer
