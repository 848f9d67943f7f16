"""How likely a causal LM finds each of several continuations of one prompt (no generation).

The prompt runs once; its KV cache is repeated for the continuations, which run as one batch, right-padded
(causal attention means padding after a continuation's last token never changes its log-probabilities). A
prompt that starts with fixed text every caller shares (worked examples) runs only past it: that text's KV
cache is computed once and copied for each prompt (:class:`SharedPrefixes`).
"""

from __future__ import annotations

import copy
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch
from transformers import DynamicCache

from geri.backends.decoding import cache_argument, forward_last


class SharedPrefixes:
    """KV caches of prompt beginnings that are the same for every caller (fixed text, never a tenant's data:
    how fast a prompt starts may then tell nothing about what anyone asked), each computed once and handed out
    as copies. At most ``max_entries`` are kept (least recently used goes first). An entry serves only the
    model that computed it: after a switch of weights (bfloat16 to float32) its cache is of the old one."""

    def __init__(self, max_entries: int = 4) -> None:
        self._max_entries = max_entries
        self._entries: OrderedDict[tuple[int, ...], tuple[weakref.ref[Any], DynamicCache]] = OrderedDict()
        self._lock = threading.Lock()

    @torch.inference_mode()
    def copy_for(self, model: Any, ids: Sequence[int]) -> DynamicCache:
        """A cache holding ``ids`` run through ``model`` (the caller extends it freely); the caller holds the
        model's lock."""
        key = tuple(ids)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is model:
                self._entries.move_to_end(key)
                return copy.deepcopy(entry[1])
        stored = DynamicCache()
        forward_last(model, list(ids), stored)
        with self._lock:
            self._entries[key] = (weakref.ref(model), stored)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return copy.deepcopy(stored)

    def clear(self) -> None:
        """Forget every entry (the model they were computed with is no longer the one that runs)."""
        with self._lock:
            self._entries.clear()


@torch.inference_mode()
def continuation_log_probs(model: Any, prefix: Sequence[int], continuations: Sequence[Sequence[int]],
                           pad_id: int = 0, start: tuple[DynamicCache, int] | None = None) -> list[list[float]]:
    """The log-probability of each token of each continuation after ``prefix`` (token ids).

    Args:
        model: A transformers causal LM.
        prefix: The prompt's token ids (at least one).
        continuations: Token ids of each continuation; an empty one gets an empty list.
        pad_id: Any valid token id, used only to pad the batch.
        start: A cache already holding the first ``n`` tokens of ``prefix`` (``n`` < its length), and ``n``.
    """
    if not prefix:
        raise ValueError("continuation_log_probs needs a non-empty prefix")
    wanted = [i for i, c in enumerate(continuations) if c]
    out: list[list[float]] = [[] for _ in continuations]
    if not wanted:
        return out
    cache, done = start if start is not None else (DynamicCache(), 0)
    if not 0 <= done < len(prefix):
        raise ValueError(f"a start cache of {done} tokens must leave some of the {len(prefix)}-token prefix to run")
    last = forward_last(model, list(prefix[done:]), cache).log_softmax(-1)
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
