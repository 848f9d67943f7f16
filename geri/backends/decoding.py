"""The embedded backend's decode loop: one forward pass per choice the model makes, not per token.

Two rules make the first answer token come sooner than ``transformers.generate`` would:
- **Forced runs in one pass.** Under a JSON schema most tokens are forced by the grammar (keys, quotes,
  brackets). After each sampled token the grammar's forced continuation (llguidance's
  ``compute_ff_tokens``) is appended and the whole run goes through the model in one forward pass.
- **The previous prompt's KV cache is reused** for the prefix a new prompt shares with it (the chat
  template and system prompt at least; the sources too when a conversation asks again), so only the new
  tail is processed.
Greedy decoding picks the same tokens either way. See docs/decisions/0311-jump-forward-decoding.md.
"""

from __future__ import annotations

import copy
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from geri.backends.base import GenerationParams
from geri.backends.constrained import JsonSchemaConstraint

# A shared prefix shorter than this is processed again rather than copied out of the cache.
MIN_REUSED_PREFIX = 16


@dataclass
class DecodeResult:
    """What a finished decode produced."""

    completion_tokens: int
    hit_eos: bool


class PromptCache:
    """The KV cache of the last prompt of each scope (a tenant), reusable for the prefix the next prompt of
    the same scope shares with it. Scopes never share an entry: how fast a prompt starts must not tell one
    tenant what another asked. At most ``max_entries`` scopes are kept (least recently used goes first)."""

    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[list[int], DynamicCache]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, scope: str, ids: list[int]) -> tuple[DynamicCache, int]:
        """A cache holding the longest usable prefix of ``ids`` and that prefix's length (0: a fresh cache).

        At least one token is always left to process: its logits choose the first new token.
        """
        with self._lock:
            entry = self._entries.get(scope)
            if entry is None:
                return DynamicCache(), 0
            self._entries.move_to_end(scope)
            shared = min(_common_prefix(entry[0], ids), len(ids) - 1)
            if shared < MIN_REUSED_PREFIX:
                return DynamicCache(), 0
            cache = copy.deepcopy(entry[1])
        _keep_first(cache, shared)
        return cache, shared

    def keep(self, scope: str, ids: list[int], cache: DynamicCache) -> None:
        """Remember the part of ``cache`` that holds ``ids`` (it may hold more: a forced run after them)."""
        if self._max_entries <= 0:
            return
        snapshot = copy.deepcopy(cache)
        _keep_first(snapshot, len(ids))
        with self._lock:
            self._entries[scope] = (list(ids), snapshot)
            self._entries.move_to_end(scope)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)


def _keep_first(cache: DynamicCache, length: int) -> None:
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def decode(
    model: Any,
    prompt_ids: list[int],
    params: GenerationParams,
    *,
    constraint: JsonSchemaConstraint | None,
    prompt_cache: PromptCache | None,
    eos_ids: frozenset[int],
    emit: Callable[[list[int]], None],
    should_stop: Callable[[], bool],
) -> DecodeResult:
    """Generate up to ``params.max_tokens`` tokens after ``prompt_ids``, passing each new run to ``emit``.

    Args:
        model: A causal LM (transformers) in eval mode.
        prompt_ids: The encoded prompt.
        params: Length and sampling settings (temperature 0 is greedy).
        constraint: The schema the output must follow, or None.
        prompt_cache: Where the previous prompt of ``params.cache_scope`` left its KV cache, and this one leaves its.
        eos_ids: Tokens that end the generation.
        emit: Receives the tokens of every step (a sampled token and its forced run).
        should_stop: Polled after every step; True ends the generation.
    """
    generator = _generator(params)
    cache, reused = prompt_cache.take(params.cache_scope, prompt_ids) if prompt_cache else (DynamicCache(), 0)
    pending = list(prompt_ids[reused:])
    produced = 0
    with torch.inference_mode():
        if constraint is not None:
            forced = constraint.forced()[: params.max_tokens]
            if forced:
                constraint.consume(forced)
                emit(forced)
                produced += len(forced)
                pending += forced
        logits = _forward(model, pending, cache)
        if prompt_cache is not None:
            prompt_cache.keep(params.cache_scope, prompt_ids, cache)
        while produced < params.max_tokens and not should_stop():
            if constraint is not None:
                if constraint.stopped():
                    return DecodeResult(produced, hit_eos=True)
                constraint.mask(logits)
            token = _choose(logits, params, generator)
            if token in eos_ids:
                return DecodeResult(produced, hit_eos=True)
            run = [token]
            if constraint is not None:
                constraint.consume(run)
                run += constraint.forced()[: params.max_tokens - produced - 1]
                constraint.consume(run[1:])
            emit(run)
            produced += len(run)
            if produced >= params.max_tokens or should_stop():
                break
            logits = _forward(model, run, cache)
    return DecodeResult(produced, hit_eos=False)


def _forward(model: Any, ids: list[int], cache: DynamicCache) -> torch.Tensor:
    """Run ``ids`` through the model on top of ``cache`` (extended in place); the last position's logits."""
    past = cache.get_seq_length()
    input_ids = torch.tensor([ids], dtype=torch.long)
    positions = torch.arange(past, past + len(ids), dtype=torch.long).unsqueeze(0)
    out = model(input_ids=input_ids, position_ids=positions, use_cache=True, logits_to_keep=1,
                **{_cache_argument(model): cache})
    return out.logits[0, -1].float()


_CACHE_ARGUMENT: dict[type, str] = {}


def _cache_argument(model: Any) -> str:
    """The forward argument that takes the KV cache: ``cache`` in recent transformers, ``past_key_values`` before."""
    kind = type(model)
    if kind not in _CACHE_ARGUMENT:
        accepted = inspect.signature(getattr(model, "forward", model)).parameters
        _CACHE_ARGUMENT[kind] = "cache" if "cache" in accepted else "past_key_values"
    return _CACHE_ARGUMENT[kind]


def _generator(params: GenerationParams) -> torch.Generator | None:
    if params.temperature <= 0:
        return None
    generator = torch.Generator()
    if params.seed is not None:
        generator.manual_seed(params.seed)
    else:
        generator.seed()
    return generator


def _choose(logits: torch.Tensor, params: GenerationParams, generator: torch.Generator | None) -> int:
    """Greedy at temperature 0; otherwise sampled from the temperature-scaled, top-p-truncated distribution."""
    if generator is None:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / params.temperature, dim=-1)
    if params.top_p is not None and 0 < params.top_p < 1:
        sorted_probs, order = torch.sort(probs, descending=True)
        outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs > params.top_p
        sorted_probs[outside] = 0
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))
