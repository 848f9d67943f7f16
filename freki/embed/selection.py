"""Which encoder a server runs, chosen once at start: ONNX Runtime (default on CPU) or torch, and the fastest
runner for indexing batches on this machine.

Both compute the same sentence-transformers pipeline (transformer, pooling, normalisation); ONNX Runtime
is the default because it is the faster of the two on CPU, with the same vectors
(docs/decisions/0002-onnx-torch-int8.md).

The ONNX graph is exported from the loaded torch model on first use and cached under
``embedding_cache_dir`` (a file per model and exporter version, written atomically, so concurrent
processes can share the directory). Every load is checked: a few probe texts are encoded by both
engines and the ONNX encoder is only used when each probe's cosine to torch is at least
``MIN_PROBE_COSINE``. Otherwise, or when export fails (read-only directory, a model the exporter
cannot trace), Freki logs why and stays on torch: slower, never different.

Batches of many texts (indexing, and query passes under concurrency), from as many padded tokens as
``bulk_choice.min_tokens`` measured on this machine, may run on another
runner (``freki.embed.runners.TorchRunner``): the model traced to TorchScript, in fp32 or under bf16
autocast (matrix products take bf16 inputs and accumulate in fp32; normalisation and softmax stay
fp32), each batch cut into row slices on one worker per core. Which one pays depends on the CPU (bf16
only with native bf16 kernels: AVX512-BF16 or AMX), so ``embedding_bulk_runner: auto`` times every
candidate that passes the probe check on this machine and keeps the fastest (``freki.embed.bulk_choice``).
A lone text always runs in fp32 ONNX. No int8: it falls below the probe's cosine bar on short sentences
(docs/decisions/0002-onnx-torch-int8.md).
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from freki.embed import bulk_choice
from freki.embed.encoders import PAD_SLACK, BatchedEncoder, Encoder, TorchEncoder
from freki.embed.onnx_export import export_onnx
from freki.embed.runners import BatchRunner, OnnxRunner, TorchRunner
from wolf_service.hardware import native_bf16

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("freki.encoders")

MIN_PROBE_COSINE = 0.99
PROBE_TEXTS = (
    "hello",
    "Error E-4711: the relay refused the connection on port 9427.",
    "Mean pooling averages the token embeddings, weighted by the attention mask, before normalising.",
    "Ein kurzer deutscher Satz über Vektorsuche.",
    "The 1918 influenza pandemic infected about one third of the world's population, and "
    "estimates of the deaths it caused range from 17 million to 50 million or more. " * 4,
)


def build_encoder(
    model: SentenceTransformer, *, backend: str, device: str, model_path: str, cache_dir: Path,
    max_length: int, bulk_bf16: bool = True, bulk: str = "auto", index_threads: int | None = None,
) -> Encoder:
    """The encoder to use: ONNX when asked for, on CPU, exportable and equivalent; else torch.

    Indexing batches go to the bulk runner ``bulk`` names (``"onnx"``, ``"torch-fp32"``, ``"bf16"``) or,
    with ``"auto"``, to the fastest of those that build, pass the probe check and (bf16) have native
    instructions, timed on this machine (``freki.embed.bulk_choice``). ``bulk_bf16=False`` leaves bf16 out.
    ``index_threads``: cores its passes may use (None: every core; queries then share it, see
    ``query_lane_encoder``).
    """
    torch_encoder = TorchEncoder(model)
    if backend == "torch":
        return torch_encoder
    if device != "cpu":
        log.info("embedding on %s: using torch (the ONNX path is CPU-only)", device)
        return torch_encoder
    # torch's probe vectors (a torch pass), computed once for every check and only when a check runs.
    reference = functools.cache(lambda: probe_vectors(torch_encoder))
    onnx = _checked_runner(lambda: OnnxRunner(export_onnx(model, model_path, cache_dir), index_threads or 0),
                           reference, model,
                           max_length, what="ONNX embedding", instead="using torch")
    if onnx is None:
        return torch_encoder
    wanted = _bulk_candidates(bulk, bulk_bf16)
    remembered = bulk_choice.recall(cache_dir, model_path, wanted) if bulk == "auto" and len(wanted) > 1 else None
    wanted = [remembered] if remembered else wanted
    runners: dict[str, BatchRunner] = {"onnx": onnx}
    for name in wanted:
        if name == "onnx":
            continue
        runner = _checked_runner(functools.partial(TorchRunner, model, bf16=name == "bf16", cores=index_threads),
                                 reference, model,
                                 max_length, what=f"{name} embedding for indexing batches",
                                 instead="indexing batches run without it")
        if runner is not None:
            runners[name] = runner
    if len(runners) > 1 and bulk == "auto" and not remembered:
        chosen = bulk_choice.measure(runners, model.tokenizer, cache_dir, model_path)
    else:  # configured, remembered, or the only candidate left
        chosen = wanted[0] if wanted[0] in runners else "onnx"
        if bulk != "auto":
            log.info("indexing batches run on %s (embedding_bulk_runner)", chosen)
    if chosen == "onnx":
        return BatchedEncoder(model.tokenizer, max_length, onnx)
    min_tokens = bulk_choice.min_tokens(onnx, runners[chosen], model.tokenizer, cache_dir, model_path)
    return BatchedEncoder(model.tokenizer, max_length, onnx, bulk=runners[chosen], bulk_min_tokens=min_tokens,
                          pad_slack=PAD_SLACK)


def query_lane_encoder(indexing: Encoder, tokenizer: object, max_length: int) -> Encoder | None:
    """An encoder for queries beside ``indexing``'s passes: the same exported ONNX model in a session of its
    own (every core, fp32, its own tokenizer copy), or None when ``indexing`` does not run ONNX."""
    if not isinstance(indexing, BatchedEncoder) or not isinstance(indexing.runner, OnnxRunner):
        return None
    return BatchedEncoder(copy.deepcopy(tokenizer), max_length, OnnxRunner(indexing.runner.path))


def _bulk_candidates(bulk: str, bulk_bf16: bool) -> list[str]:
    """The bulk runners worth building for the ``bulk`` setting on this CPU."""
    if bulk != "auto":
        if bulk == "bf16" and not native_bf16():
            log.warning("embedding_bulk_runner is bf16 but this CPU has no native bf16 (emulated bf16 is slower "
                        "than fp32); using it anyway as configured")
        return [bulk]
    names = ["onnx", "torch-fp32"]
    if bulk_bf16 and native_bf16():
        names.append("bf16")
    elif bulk_bf16:
        log.info("no native bf16 on this CPU: indexing batches run in fp32")
    return names


def _checked_runner(make: Callable[[], BatchRunner], reference: Callable[[], np.ndarray],
                    model: SentenceTransformer, max_length: int, *, what: str, instead: str) -> BatchRunner | None:
    """``make()``'s runner if it builds and agrees with the ``reference()`` probe vectors; else None, logged."""
    try:
        runner = make()
        cosine = probe_cosine(reference(), BatchedEncoder(model.tokenizer, max_length, runner))
    except Exception as exc:  # export/trace/runtime errors of every kind mean "do without it"
        log.warning("%s unavailable (%s: %s); %s", what, type(exc).__name__, exc, instead)
        return None
    if cosine < MIN_PROBE_COSINE:
        log.warning("%s differs from torch fp32 (min probe cosine %.4f < %.2f); %s",
                    what, cosine, MIN_PROBE_COSINE, instead)
        return None
    log.info("%s on: min probe cosine to torch fp32 %.6f", what, cosine)
    return runner


def probe_vectors(encoder: Encoder) -> np.ndarray:
    """The encoder's vectors for ``PROBE_TEXTS``."""
    return encoder.encode(PROBE_TEXTS, batch_size=len(PROBE_TEXTS))


def probe_cosine(reference: Encoder | np.ndarray, candidate: Encoder) -> float:
    """The lowest cosine over ``PROBE_TEXTS`` between the candidate's vectors and the reference's
    (an encoder, or its ``probe_vectors``)."""
    a = reference if isinstance(reference, np.ndarray) else probe_vectors(reference)
    b = probe_vectors(candidate)
    return float(np.min(np.sum(a * b, axis=1)))
