"""Batch runners: run the embedding model on padded batches of token ids.

``OnnxRunner`` runs the exported graph (``freki.embed.onnx_export``) in ONNX Runtime, fp32;
``TorchRunner`` runs the traced torch model, fp32 or under bf16 autocast, for large indexing batches
(``freki.embed.selection`` picks one at start). ``model_pipeline`` is the one torch module both are built from.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer


class BatchRunner(Protocol):
    """Runs the model on padded batches of token ids; returns each batch's unit vectors, ``(rows, dim)``."""

    name: str
    # Rows it runs side by side: a batch with fewer leaves cores idle.
    parallel_rows: int

    def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]: ...


class OnnxRunner:
    """The exported model run by ONNX Runtime on CPU, fp32."""

    name = "onnx"
    parallel_rows = 1  # ONNX Runtime spreads each op of a batch, even of one row, over every core

    def __init__(self, path: Path, threads: int = 0) -> None:
        """``threads``: ONNX Runtime's intra-op threads for a run (0: one per core)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # ONNX Runtime's worker threads spin-wait after each run by default. In a server that burns the
        # cores the gRPC threads and the vector search need (docs/decisions/0002-onnx-torch-int8.md).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        # Memory patterns are planned and kept per input shape; every (batch, length) the server sees is a new
        # shape, so the plans would only pile up in memory. Same results.
        options.enable_mem_pattern = False
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        self.path = path

    def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
        # One batch at a time: ONNX Runtime spreads each over every core itself.
        return [np.asarray(self._session.run(None, {n: feed[n] for n in self._inputs})[0]) for feed in feeds]


class TorchRunner:
    """The torch model on CPU traced to TorchScript, fp32 or (``bf16=True``) under bf16 autocast.

    Traced, not eager: eager torch takes the GIL back between its ~100 ops per pass, and in a
    server whose other threads hold the GIL each re-take can wait a switch interval
    (docs/decisions/0002-onnx-torch-int8.md). The traced graph runs in C++ without the GIL.

    Batches run side by side on ``workers`` threads, each with its own share of the cores for
    OpenMP, rather than one batch at a time across all cores: torch splits each op statically
    between its threads, so one preempted thread stalls the whole op, and the server's other
    threads preempt often (docs/decisions/0002-onnx-torch-int8.md).
    """

    def __init__(self, model: SentenceTransformer, workers: int | None = None, *, bf16: bool = False,
                 cores: int | None = None) -> None:
        """``cores``: how many cores its workers may use together (default: every core of the process)."""
        import contextlib

        import torch

        self.name = "bf16" if bf16 else "torch-fp32"
        self._names = list(model.tokenizer.model_input_names)
        # A padded sample, so that the traced graph keeps the attention-mask path (the probe checks it).
        sample = model.tokenizer(["an example", "a somewhat longer example text"], padding=True, return_tensors="pt")
        # With the JIT's own autocast pass off, tracing inside autocast records the casts as graph ops.
        # TorchScript is deprecated in favour of torch.compile, which needs a C++ compiler at run time. If a
        # torch release drops it, this raises and build_encoder keeps indexing on fp32 ONNX (logged).
        previous = torch._C._jit_set_autocast_mode(False)
        try:
            autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
            with torch.no_grad(), autocast, warnings.catch_warnings():
                # Tracer warnings on shape branches (the probe decides) and the deprecation notices.
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(model_pipeline(model).eval(), tuple(sample[n] for n in self._names),
                                         check_trace=False)
                # Freezing inlines the weights as constants: faster passes (docs/decisions/0002-onnx-torch-int8.md).
                self._module = torch.jit.freeze(traced.eval())
        finally:
            torch._C._jit_set_autocast_mode(previous)
        cores = cores or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
        self.workers = workers or min(cores, 4)
        self.parallel_rows = self.workers
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=f"freki-{self.name}",
                                        initializer=_limit_openmp,
                                        initargs=(_threads_within_openmp_limit(max(1, cores // self.workers)),))

    def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
        # Each batch is cut by rows into one slice per worker, so that the workers finish together
        # (a pass often holds one or two batches of very different sizes).
        slices = [np.array_split(np.arange(len(feed["input_ids"])), min(self.workers, len(feed["input_ids"])))
                  for feed in feeds]
        tasks = [_rows(feed, rows) for feed, parts in zip(feeds, slices, strict=True) for rows in parts]
        results = iter(self._pool.map(self._run_one, tasks))
        return [np.concatenate([next(results) for _ in parts]) for parts in slices]

    def _run_one(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vectors = self._module(*(torch.from_numpy(feed[name]) for name in self._names))
        return vectors.float().numpy()


def _rows(feed: dict[str, np.ndarray], rows: np.ndarray) -> dict[str, np.ndarray]:
    """Some rows of a padded batch, with the padding none of them needs cut off."""
    width = int(feed["attention_mask"][rows].sum(axis=1).max()) if "attention_mask" in feed else None
    return {name: array[rows, :width] for name, array in feed.items()}


def _threads_within_openmp_limit(threads: int) -> int:
    """``threads``, lowered to ``OMP_THREAD_LIMIT`` when set: a bf16 matmul planned for more threads than
    OpenMP starts leaves part of its result unwritten (docs/decisions/0350)."""
    from wolf_service.hardware import openmp_thread_limit

    return min(threads, openmp_thread_limit() or threads)


def _limit_openmp(threads: int) -> None:
    """Cap OpenMP (torch's intra-op pool) in the calling thread only; other threads keep theirs."""
    from threadpoolctl import threadpool_limits

    _openmp_limit.value = threadpool_limits(limits=threads, user_api="openmp")


_openmp_limit = threading.local()


def model_pipeline(model: SentenceTransformer) -> torch.nn.Module:
    """Every sentence-transformers module in order, then L2 normalisation (as encode() does), as one module
    taking the tokenizer's inputs positionally."""
    import torch

    names = list(model.tokenizer.model_input_names)

    class _Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            features: dict[str, torch.Tensor] = dict(zip(names, inputs, strict=True))
            for module in self.model:
                features = module(features)
            return torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)

    return _Pipeline()
