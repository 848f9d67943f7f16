"""Which runner embeds indexing batches fastest on this machine: a short self-benchmark, remembered on disk.

No fixed choice is right everywhere: which runner wins differs by CPU (docs/decisions/0002-onnx-torch-int8.md).
So at start every candidate that passed
the probe check runs the same two padded batches (sentence-sized and chunk-sized), best of ``ROUNDS``, and
the fastest wins; the log line gives the timings. The result is remembered under the cache directory per
CPU model, core count, library versions and model, so later starts on the same machine skip the timing
(and the building of the runners that lost). ``embedding_bulk_runner`` overrides the choice.

From how many padded tokens a batch pays on the chosen runner is measured too (``min_tokens``): query passes
are many short batches, and where the bulk runner starts to cost less CPU than fp32 ONNX Runtime differs
by CPU (on some, torch fp32 never does).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from freki.embed.runners import BatchRunner

log = logging.getLogger("freki.encoders")

# Bump when the benchmark changes, so choices made by an older one are measured again.
BENCH_VERSION = 3
ROUNDS = 2
# Rows x word-pieces of the timed batches: like the passes of chunks that concurrent indexing calls share;
# smaller batches rank the runners unlike real indexing does (docs/decisions/0002-onnx-torch-int8.md).
SHAPES = ((12, 160), (4, 256))
# Query-shaped batches (rows x word-pieces) timed for ``min_tokens``, ``LADDER_ROWS`` rows of each per round.
LADDER = ((2, 32), (4, 32), (8, 32), (16, 32))
LADDER_ROWS = 32
# ``min_tokens`` when the bulk runner is cheaper at no LADDER shape: the smallest shape it was chosen on.
_NEVER_CHEAPER = min(rows * width for rows, width in SHAPES)
_CROSSOVERS = frozenset(rows * width for rows, width in LADDER) | {_NEVER_CHEAPER}
_TEXT = ("Mean pooling averages the token embeddings, weighted by the attention mask, before the vector is "
         "normalised to unit length so that cosine similarity is a dot product. ") * 12


def recall(cache_dir: Path, model_path: str, candidates: list[str]) -> str | None:
    """The choice remembered for this machine and model, if it is one of ``candidates``."""
    path = _path(cache_dir, model_path)
    remembered = _read(path).get("chosen")
    if remembered in candidates:
        log.info("indexing batches run on %s (measured on this machine before; %s)", remembered, path)
        return str(remembered)
    return None


def measure(runners: dict[str, BatchRunner], tokenizer: Any, cache_dir: Path, model_path: str) -> str:
    """Time each runner on the same batches, log the figures, remember and return the fastest's name."""
    feeds = [_feed(tokenizer, rows, width) for rows, width in SHAPES]
    timings: dict[str, float] = {}
    for name, runner in runners.items():
        runner.run(feeds[:1])  # warm-up: first-run allocations and thread pools
        timings[name] = _best_of_rounds(partial(runner.run, feeds), time.perf_counter)
    chosen = min(timings, key=lambda name: timings[name])
    figures = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in timings.items())
    log.info("indexing batches run on %s: fastest on this machine (%s; set embedding_bulk_runner to override)",
             chosen, figures)
    record = {"chosen": chosen, "ms": {name: round(seconds * 1000, 1) for name, seconds in timings.items()}}
    _remember(_path(cache_dir, model_path), record)
    return chosen


def min_tokens(onnx: BatchRunner, bulk: BatchRunner, tokenizer: Any, cache_dir: Path, model_path: str) -> int:
    """Padded tokens (rows x width) from which a batch costs less CPU on ``bulk`` than on fp32 ``onnx`` here.

    The smallest ``LADDER`` shape from which ``bulk`` is cheaper at every larger one; if at none, the
    smallest indexing shape of ``SHAPES`` (where ``bulk`` was chosen as faster). CPU time of the whole
    process, not wall time: what a busy server runs out of. Remembered with the runner choice.
    """
    path = _path(cache_dir, model_path)
    record = _read(path)
    known = record.get("min_tokens")
    known = known if isinstance(known, dict) else {}
    remembered = known.get(bulk.name)
    # Only a figure this function can produce is taken from the file (not true, -5 or 10**22: measure again).
    if type(remembered) is int and remembered in _CROSSOVERS:
        log.info("batches of %d padded tokens or more run on %s (measured on this machine before)", remembered,
                 bulk.name)
        return remembered
    cpu = {name: [_cpu_per_row(runner, tokenizer, rows, width) for rows, width in LADDER]
           for name, runner in (("onnx", onnx), (bulk.name, bulk))}
    tokens = _NEVER_CHEAPER
    for k in reversed(range(len(LADDER))):
        if cpu[bulk.name][k] >= cpu["onnx"][k]:
            break
        tokens = LADDER[k][0] * LADDER[k][1]
    figures = "; ".join(f"{rows}x{width}: onnx {a * 1000:.2f}, {bulk.name} {b * 1000:.2f}"
                        for (rows, width), a, b in zip(LADDER, cpu["onnx"], cpu[bulk.name], strict=True))
    log.info("batches of %d padded tokens or more run on %s (CPU ms per row here: %s)", tokens, bulk.name, figures)
    record["min_tokens"] = {**known, bulk.name: tokens}
    measured = record.get("query_cpu_ms")
    record["query_cpu_ms"] = {**(measured if isinstance(measured, dict) else {}), bulk.name: {
        name: [round(seconds * 1000, 2) for seconds in values] for name, values in cpu.items()}}
    _remember(path, record)
    return tokens


def _cpu_per_row(runner: BatchRunner, tokenizer: Any, rows: int, width: int) -> float:
    """The process's CPU seconds per row for ``LADDER_ROWS`` rows in batches of ``rows`` x ``width``, best of
    ``ROUNDS``."""
    feeds = [_feed(tokenizer, rows, width)] * max(1, LADDER_ROWS // rows)
    runner.run(feeds[:1])

    def one_batch_per_call() -> None:  # as a query pass of one length batch runs
        for feed in feeds:
            runner.run([feed])

    return _best_of_rounds(one_batch_per_call, time.process_time) / (len(feeds) * rows)


def _best_of_rounds(run: Callable[[], object], clock: Callable[[], float]) -> float:
    """The shortest of ``ROUNDS`` runs of ``run``, timed by ``clock`` (wall or CPU seconds)."""
    best = float("inf")
    for _ in range(ROUNDS):
        started = clock()
        run()
        best = min(best, clock() - started)
    return best


def _read(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _feed(tokenizer: Any, rows: int, width: int) -> dict[str, np.ndarray]:
    encoded = tokenizer([_TEXT] * rows, truncation=True, max_length=width, padding="max_length", return_tensors="np")
    return {name: np.asarray(encoded[name], dtype=np.int64) for name in tokenizer.model_input_names}


def _path(cache_dir: Path, model_path: str) -> Path:
    import onnxruntime
    import torch

    from freki.embed.onnx_export import cache_key

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    machine = f"{BENCH_VERSION}|{_cpu_model()}|{cores}|{torch.__version__}|{onnxruntime.__version__}"
    digest = hashlib.sha256(machine.encode()).hexdigest()[:16]
    return Path(cache_dir) / "bulk-runner" / f"{cache_key(model_path)}-{digest}.json"


def _cpu_model() -> str:
    """The first CPU's model and instruction-set lines (Linux: x86 "model name"/"flags", ARM "CPU part"/
    "Features"), else what the platform says."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        info = ""
    first = info.split("\n\n", 1)[0]
    keep = ("model name", "flags", "CPU implementer", "CPU part", "Features")
    lines = [line for line in first.splitlines() if line.startswith(keep)]
    return "|".join(lines) or f"{platform.machine()}|{platform.processor()}"


def _remember(path: Path, record: dict[str, Any]) -> None:
    """Write atomically; a cache that cannot be written only means measuring again next start."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.chmod(tmp, 0o644)  # the cache may be shared by service users
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        log.info("cannot remember the indexing runner choice in %s (%s); it is measured at each start", path, exc)
