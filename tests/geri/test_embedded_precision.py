"""bfloat16 in the embedded backend: the start-up self-check, the thread limit, the fallback to float32.

The fallback is tested at the seam (the real SmolLM2 whose logits are replaced by NaN at a chosen pass) and
the self-check against the real broken kernel: bf16 matmuls planned for more threads than OMP_THREAD_LIMIT
lets OpenMP start leave part of their output unwritten.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from geri.backends.base import ChatMessage, Completion, Delta, GenerationParams
from geri.backends.decoding import NonFiniteLogits, PromptCache, decode
from geri.backends.embedded import EmbeddedBackend, default_model_path
from geri.backends.loaded_model import LoadedModel, load_model
from geri.backends.precision import compare_with_reference
from tests.geri.geri_servers_support import geri_settings
from wolf_service.hardware import native_bf16

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUESTION = [ChatMessage("system", "Answer briefly."), ChatMessage("user", "Name three colours of the rainbow.")]
GREEDY = GenerationParams(max_tokens=12, temperature=0.0)


class PoisonedModel:
    """The real model, whose logits at forward pass ``poisoned`` (counting from 1; 0 = every pass) are NaN."""

    def __init__(self, model: Any, poisoned: int) -> None:
        self.model, self.poisoned, self.passes = model, poisoned, 0
        self.forward = model.forward  # what the decode loop reads the cache argument's name from

    def __call__(self, **kwargs: Any) -> Any:
        self.passes += 1
        out = self.model(**kwargs)
        if self.poisoned in (0, self.passes):
            out.logits = torch.full_like(out.logits, float("nan"))
        return out


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    return load_model(default_model_path())


def greedy(model: Any, loaded: LoadedModel, *, fallback: Any = None, cache: PromptCache | None = None) -> str:
    tokens: list[int] = []
    decode(model, loaded.encode_chat(QUESTION), GREEDY, constraint=None, prompt_cache=cache,
           eos_ids=loaded.eos_ids, emit=tokens.extend, should_stop=lambda: False, fallback=fallback)
    return str(loaded.tokenizer.decode(tokens, skip_special_tokens=True))


def test_nan_logits_mid_answer_continue_once_on_the_fallback_model_with_the_same_greedy_text(
        loaded: LoadedModel) -> None:
    reasons: list[str] = []

    def fallback(reason: str) -> Any:
        reasons.append(reason)
        return loaded.model

    text = greedy(PoisonedModel(loaded.model, poisoned=3), loaded, fallback=fallback)

    assert text == greedy(loaded.model, loaded) and text
    vocabulary = loaded.model.config.vocab_size
    assert reasons == [f"{vocabulary} NaN and 0 infinite of {vocabulary} logits"]


def test_without_a_fallback_nan_logits_raise_and_leave_no_prompt_cache(loaded: LoadedModel) -> None:
    cache = PromptCache(max_entries=2)
    with pytest.raises(NonFiniteLogits, match="not finite: .* NaN and 0 infinite"):
        greedy(PoisonedModel(loaded.model, poisoned=1), loaded, cache=cache)
    assert cache.reusable("", loaded.encode_chat(QUESTION)) == 0

    with pytest.raises(NonFiniteLogits, match="nor after the fallback"):
        greedy(PoisonedModel(loaded.model, poisoned=1), loaded,
               fallback=lambda reason: PoisonedModel(loaded.model, poisoned=0))


def test_the_self_check_wants_bf16s_top_token_among_fp32s_first_three() -> None:
    reference = torch.tensor([0.0, 5.0, 4.0, 3.0, 2.0])
    assert compare_with_reference(reference, torch.tensor([0.0, 4.0, 5.0, 1.0, 1.0])) is None
    assert compare_with_reference(reference, torch.tensor([0.0, 1.0, 1.0, 1.0, 9.0])) == (
        "top token 4 is not among float32's top 3 [1, 2, 3]")
    assert compare_with_reference(reference, torch.tensor([0.0, float("inf"), 1.0, 1.0, 1.0])) == (
        "0 NaN and 1 infinite of 5 logits")


def test_the_backend_leaves_bfloat16_for_float32_once_counts_it_and_answers_as_float32(
        loaded: LoadedModel, caplog: pytest.LogCaptureFixture) -> None:
    backend = EmbeddedBackend(geri_settings(embedded_dtype="bfloat16"))
    bf16 = backend._loaded()
    assert bf16.in_bfloat16 and bf16.self_check_failure is None
    real_model = bf16.model
    bf16.model = PoisonedModel(real_model, poisoned=1)
    try:
        with caplog.at_level(logging.WARNING, logger="geri.embedded"):
            first = ask(backend)
    finally:
        bf16.model = real_model
    assert backend.stats.precision_fallbacks == 1
    assert not backend._loaded().in_bfloat16
    assert any("non-finite logits in bfloat16" in r.getMessage() and "NaN" in r.getMessage()
               for r in caplog.records)
    assert first == ask(backend) == greedy(loaded.model, loaded)
    assert backend.stats.precision_fallbacks == 1


def ask(backend: EmbeddedBackend) -> str:
    events = list(backend.generate(QUESTION, GREEDY, backend.default_model, threading.Event()))
    assert isinstance(events[-1], Completion) and events[-1].finish_reason in ("stop", "length")
    return "".join(e.text for e in events if isinstance(e, Delta))


CHECK_UNDER_A_THREAD_LIMIT = """
import json, torch
from geri.backends.decoding import non_finite_reason
from geri.backends.embedded import default_model_path
from geri.backends.loaded_model import cast_checked_bfloat16, load_float32
from geri.backends.precision import CHECK_MESSAGES, last_logits
from wolf_service.hardware import fit_torch_threads_to_openmp_limit
torch.set_num_threads(2)
loaded = load_float32(default_model_path())
failure = cast_checked_bfloat16(loaded)
ids = loaded.encode_chat(CHECK_MESSAGES)
broken = non_finite_reason(last_logits(loaded.model, ids))
threads = fit_torch_threads_to_openmp_limit()
print(json.dumps({"failure": failure, "broken": broken, "threads": threads,
                  "after": non_finite_reason(last_logits(loaded.model, ids))}))
"""


@pytest.mark.skipif(not native_bf16(), reason="the oneDNN bf16 kernels run only on CPUs with native bf16")
def test_the_self_check_sees_bf16_kernels_broken_by_a_thread_limit_and_fitting_the_threads_mends_them() -> None:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "protos")])}
    done = subprocess.run([sys.executable, "-c", CHECK_UNDER_A_THREAD_LIMIT], env=env, capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The check's verdict is the model's real state at 2 threads, whichever way torch's kernels behave.
    assert (seen["failure"] is None) == (seen["broken"] is None), seen
    assert seen["threads"] == 1 and seen["after"] is None, seen
