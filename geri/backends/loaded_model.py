"""Load a causal LM with transformers (GGUF de-quantized, or an HF directory) and run one generation.

Weights are cached per path so several backends (e.g. tests with different windows) share
one copy. ``start_generation`` runs ``model.generate`` in a thread with a streamer and a
stopping criterion the caller controls; it is the only place that touches torch.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, TextIteratorStreamer

from geri.backends.base import ChatMessage, GenerationParams
from geri.backends.chat_markers import as_text
from geri.backends.constrained import JsonSchemaConstraint, llg_tokenizer
from geri.backends.decoding import PromptCache, decode, non_finite_reason
from geri.backends.precision import CHECK_MESSAGES, cast_to_bfloat16, compare_with_reference, last_logits
from wolf_service.errors import FailedPrecondition
from wolf_service.hardware import fit_torch_threads_to_openmp_limit, native_bf16, openmp_thread_limit

log = logging.getLogger("geri.embedded")

# How long the consumer waits on the streamer before checking that the worker is still alive.
_STREAMER_POLL_S = 0.5

_cache: dict[tuple[Path, torch.dtype], LoadedModel] = {}
_cache_lock = threading.Lock()


@dataclass
class GenerationRun:
    """A generation running in a worker thread; read ``streamer`` until it ends, then ``join``."""

    streamer: TextIteratorStreamer
    thread: threading.Thread
    completion_tokens: int = 0
    hit_eos: bool = False
    error: BaseException | None = None


@dataclass
class LoadedModel:
    """A model and tokenizer in memory, ready to generate."""

    model: Any
    tokenizer: Any
    max_positions: int
    size_bytes: int
    family: str
    dtype: torch.dtype = torch.float32
    self_check_failure: str | None = None  # why bfloat16 was asked for and float32 runs
    eos_ids: frozenset[int] = field(default_factory=frozenset)
    _grammar_tokenizer: Any = None
    _grammar_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def in_bfloat16(self) -> bool:
        """Whether the weights run in bfloat16 (else float32)."""
        return self.dtype == torch.bfloat16

    @functools.cached_property
    def special_texts(self) -> tuple[str, ...]:
        """The texts the tokenizer reads as special tokens (role and end-of-turn markers and the like), longest
        first; found once, the tokenizer does not change."""
        added = getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
        names = {str(t.content) for t in added.values() if getattr(t, "special", False)}
        names |= {str(t) for t in getattr(self.tokenizer, "all_special_tokens", ())}
        return tuple(sorted((n for n in names if len(n) > 1), key=len, reverse=True))

    def grammar_tokenizer(self) -> Any:
        """llguidance's index of the vocabulary, built on first use (~0.3 s)."""
        with self._grammar_lock:
            if self._grammar_tokenizer is None:
                vocab = int(getattr(self.model.config, "vocab_size", 0) or len(self.tokenizer))
                self._grammar_tokenizer = llg_tokenizer(self.tokenizer, vocab)
            return self._grammar_tokenizer

    def encode_chat(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Token ids of ``messages`` in the model's chat template, ending with the assistant turn.

        The template knows only role and content: an assistant turn's tool calls are written in the
        reply format the model is constrained to (``{"type": "tool", ...}``), a tool turn names its call.
        """
        encoded = self.tokenizer.apply_chat_template(
            [{"role": m.role, "content": as_text(_render(m), self.special_texts)} for m in messages],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
        )
        return list(encoded["input_ids"])

    def start_generation(
        self,
        input_ids: list[int],
        params: GenerationParams,
        *,
        should_stop: Callable[[], bool],
        on_token: Callable[[int], None],
        prompt_cache: PromptCache | None = None,
        fallback: Callable[[str], Any] | None = None,
    ) -> GenerationRun:
        """Start generating in a worker thread.

        Args:
            input_ids: The encoded prompt.
            params: Length and sampling settings.
            should_stop: Polled after every step; True ends the generation.
            on_token: Called with the number of tokens produced since the last call.
            prompt_cache: Earlier prompts' KV caches to start from, and where this prompt's is kept.
            fallback: Gives the model to continue with when logits are not finite (see ``decode``).
        """
        streamer = TextIteratorStreamer(
            self.tokenizer, skip_prompt=False, skip_special_tokens=True, timeout=_STREAMER_POLL_S
        )
        run = GenerationRun(streamer=streamer, thread=threading.Thread())
        constraint = (JsonSchemaConstraint(self.grammar_tokenizer(), params.json_schema)
                      if params.json_schema is not None else None)

        def emit(tokens: list[int]) -> None:
            run.completion_tokens += len(tokens)
            on_token(len(tokens))
            streamer.put(torch.tensor(tokens))

        def work() -> None:
            try:
                result = decode(self.model, input_ids, params, constraint=constraint,
                                prompt_cache=prompt_cache, eos_ids=self.eos_ids, emit=emit,
                                should_stop=should_stop, fallback=fallback)
                run.hit_eos = result.hit_eos
            except BaseException as exc:  # surfaced to the consumer thread, which re-raises it
                run.error = exc
            finally:
                streamer.end()

        run.thread = threading.Thread(target=work, name="geri-generate", daemon=True)
        run.thread.start()
        return run


def _render(message: ChatMessage) -> str:
    if message.tool_calls:
        calls = [json.dumps({"type": "tool", "name": c.name, "arguments": c.arguments}, separators=(",", ":"))
                 for c in message.tool_calls]
        return "\n".join([message.content, *calls]).strip()
    if message.role == "tool" and message.tool_call_id:
        return f"Result of {message.tool_call_id}:\n{message.content}"
    return message.content


def load_model(path: Path, *, threads: int | None = None, dtype: str = "float32") -> LoadedModel:
    """Load (or return the cached) model at ``path``: a ``.gguf`` file or an HF model directory.

    bfloat16 is float32's weights cast, used only if a forward pass on a fixed prompt agrees with float32's
    (finite, same top token); otherwise the model runs in float32 and ``self_check_failure`` says why.

    Args:
        path: Weights location.
        threads: torch intra-op threads; None keeps torch's default. Never above ``OMP_THREAD_LIMIT``.
        dtype: "float32", "bfloat16", or "auto" (bfloat16 where the CPU has native bf16 kernels).

    Raises:
        FailedPrecondition: float32 itself gives non-finite logits on the fixed prompt.
    """
    if threads:
        torch.set_num_threads(threads)
    wanted = torch.get_num_threads()
    if fit_torch_threads_to_openmp_limit() < wanted:
        log.log(logging.WARNING if threads else logging.INFO, "torch threads lowered from %d to OMP_THREAD_LIMIT=%s "
                "(more would break bf16 matmuls)", wanted, openmp_thread_limit())
    torch_dtype = model_dtype(dtype)
    key = (path.resolve(), torch_dtype)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        started = time.monotonic()
        loaded = load_float32(key[0])
        failure = cast_checked_bfloat16(loaded) if torch_dtype == torch.bfloat16 else None
        if failure is not None:
            log.warning("embedded model: the bfloat16 self-check failed (%s; torch threads %d, OMP_THREAD_LIMIT=%s); "
                        "running in float32", failure, torch.get_num_threads(), openmp_thread_limit())
            loaded = load_float32(key[0])  # the cast cannot be undone exactly: float32 comes from the file again
            loaded.self_check_failure = failure
        log.info("loaded %s (%s) in %.1fs (window %d)", key[0], loaded.dtype, time.monotonic() - started,
                 loaded.max_positions)
        _cache[key] = _cache[(key[0], loaded.dtype)] = loaded
        return loaded


def forget_model(path: Path, dtype: torch.dtype) -> None:
    """Drop the cached model at ``path`` in ``dtype`` (backends holding it keep their reference)."""
    with _cache_lock:
        _cache.pop((path.resolve(), dtype), None)


def load_float32(where: Path) -> LoadedModel:
    """The model in float32, checked: non-finite logits on the fixed prompt fail the load."""
    if where.suffix == ".gguf":
        source, extra = str(where.parent), {"gguf_file": where.name}
        size = where.stat().st_size
    else:
        source, extra = str(where), {}
        size = sum(p.stat().st_size for p in where.iterdir() if p.is_file())
    tokenizer = AutoTokenizer.from_pretrained(source, **extra)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, **extra)
    model.eval()
    eos = model.generation_config.eos_token_id
    eos_ids = frozenset(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    loaded = LoadedModel(
        model=model,
        tokenizer=tokenizer,
        max_positions=int(getattr(model.config, "max_position_embeddings", 2048)),
        size_bytes=size,
        family=str(getattr(model.config, "model_type", "")),
        eos_ids=eos_ids | ({tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()),
    )
    reason = non_finite_reason(last_logits(model, loaded.encode_chat(CHECK_MESSAGES)))
    if reason is not None:
        raise FailedPrecondition(f"the embedded model {where} gives non-finite logits in float32 on a fixed "
                                 f"prompt ({reason}): the weights or this CPU's kernels are broken")
    return loaded


def cast_checked_bfloat16(loaded: LoadedModel) -> str | None:
    """Cast ``loaded`` to bfloat16 and compare it with float32 on the fixed prompt: None if it agrees, else why
    not (the model is then left in bfloat16 and must not be used: load float32 again)."""
    ids = loaded.encode_chat(CHECK_MESSAGES)
    reference = last_logits(loaded.model, ids)
    cast_to_bfloat16(loaded.model)
    loaded.dtype = torch.bfloat16
    return compare_with_reference(reference, last_logits(loaded.model, ids))


def model_dtype(name: str) -> torch.dtype:
    """The torch dtype for the ``embedded_dtype`` setting; "auto" is bfloat16 only with native bf16 kernels."""
    if name == "auto":
        return torch.bfloat16 if native_bf16() else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[name]
