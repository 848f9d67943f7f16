"""The embedded backend's decode loop: one forward pass per choice the model makes, not per token.

Two rules make the first answer token come sooner than ``transformers.generate`` would:
- **Forced runs in one pass.** Under a JSON schema most tokens are forced by the grammar (keys, quotes,
  brackets). After each sampled token the grammar's forced continuation (llguidance's
  ``compute_ff_tokens``) is appended and the whole run goes through the model in one forward pass.
- **The previous prompt's KV cache is reused** for the prefix a new prompt shares with it (the chat
  template and system prompt at least; the sources too when a conversation asks again), so only the new
  tail is processed. The cache is handed over, not copied, and cut back to the prompt when the answer ends.
Logits that are not finite (a broken kernel) never reach sampling: the caller's fallback model (float32)
takes over once, from the tokens so far, or the generation fails with :class:`NonFiniteLogits`.
Greedy decoding picks the same tokens either way. See docs/decisions/0311-jump-forward-decoding.md.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
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
    tenant what another asked. At most ``max_entries`` scopes are kept (least recently used goes first).

    Entries are handed over, never copied: :meth:`take` gives the caller the stored cache itself (and forgets
    it), :meth:`keep` stores the caller's cache cut back to the prompt. A ``DynamicCache`` grows by
    concatenating new tensors, so cutting it back is a view of what it held, not a copy.
    """

    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._entries: OrderedDict[str, tuple[list[int], DynamicCache]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, scope: str, ids: list[int]) -> tuple[DynamicCache, int]:
        """A cache holding the longest usable prefix of ``ids`` and that prefix's length (0: a fresh cache).

        A usable entry leaves the store: the caller extends it, and :meth:`keep` brings it back. At least one
        token is always left to process: its logits choose the first new token.
        """
        with self._lock:
            shared = self._shared(scope, ids)
            if shared < MIN_REUSED_PREFIX:
                return DynamicCache(), 0
            _, cache = self._entries.pop(scope)
        _keep_first(cache, shared)
        return cache, shared

    def reusable(self, scope: str, ids: list[int]) -> int:
        """How many leading tokens of ``ids`` :meth:`take` would give from the cache (0: none), taking nothing."""
        with self._lock:
            shared = self._shared(scope, ids)
        return shared if shared >= MIN_REUSED_PREFIX else 0

    def keep(self, scope: str, ids: list[int], cache: DynamicCache) -> None:
        """Store ``cache`` (handed over: the caller stops using it) cut back to the part that holds ``ids``."""
        if self._max_entries <= 0:
            return
        _keep_first(cache, len(ids))
        with self._lock:
            self._entries[scope] = (list(ids), cache)
            self._entries.move_to_end(scope)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry (the model they were computed with is no longer the one that runs)."""
        with self._lock:
            self._entries.clear()

    def _shared(self, scope: str, ids: list[int]) -> int:
        entry = self._entries.get(scope)
        if entry is None:
            return 0
        self._entries.move_to_end(scope)
        return min(common_prefix(entry[0], ids), len(ids) - 1)


def _keep_first(cache: DynamicCache, length: int) -> None:
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
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
    fallback: Callable[[str], Any] | None = None,
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
        fallback: Called once, with the reason, when logits are not finite; returns the model to continue with
            (the prompt and the tokens so far are processed again on it), or None to give up.

    Raises:
        NonFiniteLogits: the logits held NaN or infinity and there was no fallback, or it failed too.
    """
    cache, reused = prompt_cache.take(params.cache_scope, prompt_ids) if prompt_cache else (DynamicCache(), 0)
    guarded = _GuardedModel(model, cache, prompt_ids, fallback)
    with torch.inference_mode():
        result = _decode_steps(guarded, prompt_ids[reused:], params, constraint, eos_ids, emit, should_stop)
    if prompt_cache is not None:
        prompt_cache.keep(params.cache_scope, prompt_ids, guarded.cache)
    return result


class NonFiniteLogits(RuntimeError):
    """The model's logits hold NaN or infinity: nothing can be chosen from them."""


def non_finite_reason(logits: torch.Tensor) -> str | None:
    """None when every logit is finite; else how many are NaN and how many infinite."""
    finite = torch.isfinite(logits)
    if bool(finite.all()):
        return None
    nan = int(torch.isnan(logits).sum())
    return f"{nan} NaN and {int((~finite).sum()) - nan} infinite of {logits.numel()} logits"


class _GuardedModel:
    """The model and its KV cache; logits that are not finite switch once to the fallback's model."""

    def __init__(self, model: Any, cache: DynamicCache, prompt_ids: list[int],
                 fallback: Callable[[str], Any] | None) -> None:
        self.model, self.cache, self._fallback = model, cache, fallback
        self._context = list(prompt_ids)  # every token the cache holds once the pending ones are processed

    def forward(self, pending: list[int], appended: list[int]) -> torch.Tensor:
        """Process ``pending`` (the prompt's unprocessed tail, then ``appended``); the last position's logits."""
        self._context += appended
        logits = forward_last(self.model, pending, self.cache)
        reason = non_finite_reason(logits)
        if reason is None:
            return logits
        fallback, self._fallback = self._fallback, None
        replacement = fallback(reason) if fallback is not None else None
        if replacement is None:
            raise NonFiniteLogits(f"the model's logits are not finite: {reason}")
        self.model, self.cache = replacement, DynamicCache()
        logits = forward_last(self.model, self._context, self.cache)
        again = non_finite_reason(logits)
        if again is not None:
            raise NonFiniteLogits(f"the model's logits are not finite ({reason}), nor after the fallback ({again})")
        return logits


def _decode_steps(guarded: _GuardedModel, pending: list[int], params: GenerationParams,
                  constraint: JsonSchemaConstraint | None, eos_ids: frozenset[int],
                  emit: Callable[[list[int]], None], should_stop: Callable[[], bool]) -> DecodeResult:
    generator = _generator(params)
    produced = 0
    forced: list[int] = []
    if constraint is not None:
        forced = constraint.forced()[: params.max_tokens]
        if forced:
            constraint.consume(forced)
            emit(forced)
            produced += len(forced)
    logits = guarded.forward(pending + forced, forced)
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
        logits = guarded.forward(run, run)
    return DecodeResult(produced, hit_eos=False)


def forward_last(model: Any, ids: list[int], cache: DynamicCache) -> torch.Tensor:
    """Run ``ids`` through the model on top of ``cache`` (extended in place); the last position's logits."""
    past = cache.get_seq_length()
    input_ids = torch.tensor([ids], dtype=torch.long)
    positions = torch.arange(past, past + len(ids), dtype=torch.long).unsqueeze(0)
    out = model(input_ids=input_ids, position_ids=positions, use_cache=True, logits_to_keep=1,
                **{cache_argument(model): cache})
    return out.logits[0, -1].float()


_CACHE_ARGUMENTS: dict[type, str] = {}


def cache_argument(model: Any) -> str:
    """The forward argument that takes the KV cache: ``cache`` in recent transformers, ``past_key_values`` before."""
    kind = type(model)
    if kind not in _CACHE_ARGUMENTS:
        accepted = inspect.signature(getattr(model, "forward", model)).parameters
        _CACHE_ARGUMENTS[kind] = "cache" if "cache" in accepted else "past_key_values"
    return _CACHE_ARGUMENTS[kind]


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
