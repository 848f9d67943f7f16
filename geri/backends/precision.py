"""bfloat16 for the embedded model, checked: cast from float32 and compared with it on a fixed prompt.

The weights are always loaded in float32 (a GGUF de-quantizes to float32 anyway); bfloat16 is a cast of the
parameters, and the floating buffers (the rotary frequencies) stay float32 as a bf16 load would keep them.
Before bfloat16 serves anything, one forward pass on :data:`CHECK_MESSAGES` must give finite logits whose
top token is among float32's top :data:`CHECK_TOP_K`; a bfloat16 model that fails is not used.
See docs/decisions/0350-bf16-self-check-and-fallback.md.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache

from geri.backends.base import ChatMessage
from geri.backends.decoding import forward_last, non_finite_reason

CHECK_MESSAGES = (
    ChatMessage("system", "You are a helpful assistant. Answer in one word."),
    ChatMessage("user", "What is the capital of France?"),
)
# bf16 may reorder near-ties among the first few candidates; a broken kernel scatters far wider.
CHECK_TOP_K = 3


def last_logits(model: Any, ids: list[int]) -> torch.Tensor:
    """The float32 logits of the last position of ``ids``, run from an empty cache."""
    with torch.inference_mode():
        return forward_last(model, ids, DynamicCache())


def cast_to_bfloat16(model: Any) -> None:
    """Cast ``model``'s parameters to bfloat16 in place; floating buffers (rotary frequencies) stay float32."""
    buffers = {name: buffer for name, buffer in model.named_buffers()}
    model.to(torch.bfloat16)
    for name, buffer in buffers.items():
        owner_name, _, attribute = name.rpartition(".")
        owner = model.get_submodule(owner_name) if owner_name else model
        owner._buffers[attribute] = buffer


def compare_with_reference(reference: torch.Tensor, logits: torch.Tensor) -> str | None:
    """None when ``logits`` are finite and their top token is among the reference's top ones; else why not."""
    reason = non_finite_reason(logits)
    if reason is not None:
        return reason
    top = int(torch.argmax(logits))
    expected = torch.topk(reference, CHECK_TOP_K).indices.tolist()
    if top not in expected:
        return f"top token {top} is not among float32's top {CHECK_TOP_K} {expected}"
    return None
