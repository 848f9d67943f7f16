"""Grammar-constrained decoding for the embedded backend: every token keeps the output valid JSON for a schema.

Uses llguidance (Microsoft's Rust grammar engine behind Guidance). Chosen by measurement on 2 CPU
cores with SmolLM2-135M (scripts/bench/geri.py --constrained reproduces it): llguidance and xgrammar
both decode at the unconstrained speed (~8.5 tokens/s here), but llguidance compiles a schema in
~0.4 s against ~2 s and gives the first token sooner, which matters because every request brings
its own schema (citation ids differ per answer); lm-format-enforcer does not import with
transformers 5. JSON is generated compact (no optional whitespace): indentation is tokens the
model would spend for nothing.
"""

from __future__ import annotations

import json
from typing import Any

import llguidance
import llguidance.hf
import llguidance.torch as llg_torch
import torch
from transformers import LogitsProcessor

from wolf_service.errors import InvalidArgument

# llguidance.JsonCompileOptions (a TypedDict that exists only in its type stubs).
_COMPACT: Any = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}


def llg_tokenizer(tokenizer: Any, vocab_size: int) -> llguidance.LLTokenizer:
    """llguidance's view of a Hugging Face tokenizer (built once per model: it indexes the vocabulary)."""
    return llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size)


class JsonSchemaConstraint(LogitsProcessor):
    """Masks every token that would make the output leave the schema's language; EOS only once it is complete."""

    def __init__(self, tokenizer: llguidance.LLTokenizer, schema: dict[str, Any]) -> None:
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults=_COMPACT)
            self._matcher = llguidance.LLMatcher(tokenizer, grammar)
        except ValueError as exc:
            raise InvalidArgument(f"the embedded backend cannot enforce this JSON schema: {str(exc)[:300]}") from None
        if self._matcher.is_error():
            raise InvalidArgument(
                f"the embedded backend cannot enforce this JSON schema: {self._matcher.get_error()[:300]}"
            )
        self._mask = llg_torch.allocate_token_bitmask(1, tokenizer.vocab_size)
        self._prompt_length: int | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self._prompt_length is None:
            self._prompt_length = int(input_ids.shape[1])
        elif not self._matcher.is_stopped():
            self._matcher.consume_token(int(input_ids[0, -1]))
        llg_torch.fill_next_token_bitmask(self._matcher, self._mask, 0)
        apply_bitmask(scores, self._mask)
        return scores


_BIT = torch.arange(32, dtype=torch.int32)


def apply_bitmask(scores: torch.Tensor, mask: torch.Tensor) -> None:
    """Set the scores of tokens the grammar forbids to -inf (bit ``t % 32`` of word ``t // 32`` is token t).

    Eager torch on purpose: ``llguidance.torch.apply_token_bitmask_inplace`` runs a ``torch.compile`` kernel,
    which needs a C++ compiler at the first call (absent from slim containers) and takes seconds to build;
    this costs ~0.1 ms a token for SmolLM2's 49k-token vocabulary.
    """
    allowed = ((mask[0].unsqueeze(1) >> _BIT) & 1).reshape(-1).to(torch.bool)
    n = min(scores.shape[-1], allowed.numel())
    scores[..., :n].masked_fill_(~allowed[:n], float("-inf"))
    scores[..., n:] = float("-inf")
