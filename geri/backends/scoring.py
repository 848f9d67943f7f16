"""How likely a causal LM finds each of several continuations of one prompt (no generation).

The prompt runs once; its KV cache is repeated for the continuations, which run as one batch, right-padded
(causal attention means padding after a continuation's last token never changes its log-probabilities).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import DynamicCache

from geri.backends.decoding import cache_argument, forward_last


@torch.inference_mode()
def continuation_log_probs(model: Any, prefix: Sequence[int], continuations: Sequence[Sequence[int]],
                           pad_id: int = 0) -> list[list[float]]:
    """The log-probability of each token of each continuation after ``prefix`` (token ids).

    Args:
        model: A transformers causal LM.
        prefix: The prompt's token ids (at least one).
        continuations: Token ids of each continuation; an empty one gets an empty list.
        pad_id: Any valid token id, used only to pad the batch.
    """
    if not prefix:
        raise ValueError("continuation_log_probs needs a non-empty prefix")
    wanted = [i for i, c in enumerate(continuations) if c]
    out: list[list[float]] = [[] for _ in continuations]
    if not wanted:
        return out
    cache = DynamicCache()
    last = forward_last(model, list(prefix), cache).log_softmax(-1)
    length = max(len(continuations[i]) for i in wanted)
    ids = torch.full((len(wanted), length), pad_id, dtype=torch.long)
    for row, i in enumerate(wanted):
        ids[row, : len(continuations[i])] = torch.tensor(list(continuations[i]))
    cache.batch_repeat_interleave(len(wanted))
    positions = torch.arange(len(prefix), len(prefix) + length, dtype=torch.long).expand(len(wanted), -1)
    logits = model(input_ids=ids, position_ids=positions, use_cache=True,
                   **{cache_argument(model): cache}).logits.float()
    log_probs = logits.log_softmax(-1)
    for row, i in enumerate(wanted):
        tokens = list(continuations[i])
        scores = [float(last[tokens[0]])]
        scores += [float(log_probs[row, t - 1, tokens[t]]) for t in range(1, len(tokens))]
        out[i] = scores
    return out
