"""The two ways Freki runs the embedding model: ONNX Runtime (default on CPU) or torch.

Both compute the same sentence-transformers pipeline (transformer, pooling, normalisation).
On this project's 2-core reference box ONNX Runtime is about 2x faster for indexing batches and
about 3x faster for a single query than torch, with vectors equal to torch's to 1e-5 (measured by
the encoders section of ``scripts/bench_freki.py``).

The ONNX graph is exported from the loaded torch model on first use and cached under
``embedding_cache_dir`` (a file per model and exporter version, written atomically, so concurrent
processes can share the directory). Every load is checked: a few probe texts are encoded by both
engines and the ONNX encoder is only used when each probe's cosine to torch is at least
``MIN_PROBE_COSINE``. Otherwise, or when export fails (read-only directory, a model the exporter
cannot trace), Freki logs why and stays on torch: slower, never different.

Indexing batches (chunks and sentences, many texts at once) run in bf16 instead when the CPU has
native bf16 instructions (AVX512-BF16 or AMX): torch autocast, so matrix products take bf16 inputs
and accumulate in fp32 while normalisation and softmax stay fp32. On the reference box that is
1.3-2.0x faster than fp32 ONNX for batches of 256 tokens and more, with a cosine to fp32 of 0.99997,
and slower below that size, so a batch is routed by its size (``BULK_MIN_TOKENS``): a lone query
always runs in fp32 ONNX. The bf16 path is checked with the same probes and dropped, with a log
line, when it disagrees or the CPU lacks bf16 (emulated bf16 is slower than fp32).

int8 quantisation (onnxruntime dynamic, per channel) was measured and rejected: 1.5x faster than
fp32 ONNX but cosine to fp32 down to 0.988 on short sentences, below the 0.99 equivalence bar.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("freki.encoders")

# Bump when the exported graph changes shape or meaning, so stale cache files are not reused.
EXPORT_FORMAT = 1
MIN_PROBE_COSINE = 0.99
# Padded tokens (rows x width) from which a batch runs on the bulk (bf16) runner. Measured on the
# reference box, bf16 over fp32 ONNX: 0.56-0.95x for one text under 100 tokens, 1.15-1.3x from
# ~100-200 tokens, 1.3-2.0x from 256 up to batches of 32 x 256.
BULK_MIN_TOKENS = 256
# Passes of at most this many texts are tokenised one text at a time, holding the GIL (see
# ``BatchedEncoder._tokenize``); larger ones (indexing) in one parallel batch call.
PER_TEXT_TOKENIZE_MAX = 64
PROBE_TEXTS = (
    "hello",
    "Error E-4711: the relay refused the connection on port 9427.",
    "Mean pooling averages the token embeddings, weighted by the attention mask, before normalising.",
    "Ein kurzer deutscher Satz über Vektorsuche.",
    "The 1918 influenza pandemic infected about one third of the world's population, and "
    "estimates of the deaths it caused range from 17 million to 50 million or more. " * 4,
)


class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors, ``(n, dim)``. Callers serialise calls."""

    name: str

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...


class TorchEncoder:
    """sentence-transformers' own ``encode``: any device, any model."""

    name = "torch"

    def __init__(self, model: SentenceTransformer) -> None:
        self._model = model

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        vectors = self._model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


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

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # ONNX Runtime's worker threads spin-wait after each run by default. In a server that burns the
        # cores the gRPC threads and the vector search need: measured on 2 cores, one client's queries
        # kept 1.7 cores busy with spinning on and 1.2 with it off, and were faster (89 vs 76 queries/s).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        self.path = path

    def run(self, feeds: Sequence[dict[str, np.ndarray]]) -> list[np.ndarray]:
        # One batch at a time: ONNX Runtime spreads each over every core itself.
        return [np.asarray(self._session.run(None, {n: feed[n] for n in self._inputs})[0]) for feed in feeds]


class TorchBf16Runner:
    """The torch model under bf16 autocast on CPU, traced to TorchScript (see the module docstring for
    when bf16 pays).

    Traced, not eager: eager torch takes the GIL back between its ~100 ops per pass, and in a
    server whose other threads hold the GIL each re-take can wait a switch interval. Replaying
    an indexing run's batches next to one busy Python thread took eager bf16 55 s against 16 s
    for ONNX Runtime. The traced graph runs in C++ without the GIL.

    Batches run side by side on ``workers`` threads, each with its own share of the cores for
    OpenMP, rather than one batch at a time across all cores: torch splits each op statically
    between its threads, so one preempted thread stalls the whole op, and the server's other
    threads preempt often. On 2 cores, the same batches took (quiet / next to a busy thread):
    ONNX Runtime 9.5 / 15.6 s, traced bf16 on 2 OpenMP threads 7.7 / 19.8 s, on 2 workers of
    one thread each 6.0 / 10.4 s.
    """

    name = "bf16"

    def __init__(self, model: SentenceTransformer, workers: int | None = None) -> None:
        import torch

        self._names = list(model.tokenizer.model_input_names)
        # A padded sample, so that the traced graph keeps the attention-mask path (the probe checks it).
        sample = model.tokenizer(["an example", "a somewhat longer example text"], padding=True, return_tensors="pt")
        # With the JIT's own autocast pass off, tracing inside autocast records the casts as graph ops.
        # TorchScript is deprecated in favour of torch.compile, which needs a C++ compiler at run time. If a
        # torch release drops it, this raises and build_encoder keeps indexing on fp32 ONNX (logged).
        previous = torch._C._jit_set_autocast_mode(False)
        try:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), warnings.catch_warnings():
                # Tracer warnings on shape branches (the probe decides) and the deprecation notices.
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(_pipeline(model).eval(), tuple(sample[n] for n in self._names),
                                         check_trace=False)
                # Freezing inlines the weights as constants: passes ~7% faster (measured on 60 indexing batches).
                self._module = torch.jit.freeze(traced.eval())
        finally:
            torch._C._jit_set_autocast_mode(previous)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.workers = workers or min(cores, 4)
        self.parallel_rows = self.workers
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="freki-bf16",
                                        initializer=_limit_openmp, initargs=(max(1, cores // self.workers),))

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


def _limit_openmp(threads: int) -> None:
    """Cap OpenMP (torch's intra-op pool) in the calling thread only; other threads keep theirs."""
    from threadpoolctl import threadpool_limits

    _openmp_limit.value = threadpool_limits(limits=threads, user_api="openmp")


_openmp_limit = threading.local()


class BatchedEncoder:
    """Tokenises once, pads texts in length batches and runs each batch on a runner.

    Batches of at least ``bulk_min_tokens`` padded tokens, and rows enough for every one of its
    workers, go to ``bulk`` when one is given (bf16 for indexing); the rest to ``runner`` (fp32).
    One 250-token chunk on a single bf16 worker took longer than on fp32 ONNX Runtime over two
    cores, which slowed one-paragraph edits.
    """

    def __init__(self, tokenizer: Any, max_length: int, runner: BatchRunner, *, bulk: BatchRunner | None = None,
                 bulk_min_tokens: int = BULK_MIN_TOKENS) -> None:
        self.name = runner.name if bulk is None else f"{runner.name}+{bulk.name}"
        self.runner = runner
        self.bulk = bulk
        self._bulk_min_tokens = bulk_min_tokens
        self._tokenizer = tokenizer
        self._single = _single_text_tokenizer(tokenizer, max_length)
        self._names = list(tokenizer.model_input_names)
        self._pad_id = int(tokenizer.pad_token_id or 0)
        self._max_length = max_length

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        encoded = self._tokenize(texts)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        batches = length_batches(order, lengths, batch_size)
        bulk = [self._goes_to_bulk(len(rows), lengths[rows[0]]) for rows in batches]
        out: np.ndarray | None = None
        # Bulk batches first, then the rest: the two runners would compete for the same cores.
        for runner, is_bulk in ((self.bulk, True), (self.runner, False)):
            picked = [rows for rows, b in zip(batches, bulk, strict=True) if b == is_bulk]
            if runner is None or not picked:
                continue
            for rows, vectors in zip(picked, runner.run([self._feed(encoded, lengths, rows) for rows in picked]),
                                     strict=True):
                if out is None:
                    out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
                out[rows] = vectors
        assert out is not None, "encode() needs at least one text"
        return out

    def _tokenize(self, texts: Sequence[str]) -> Any:
        """Token ids, attention masks and type ids of ``texts``, truncated to the model's window.

        A batch call releases the GIL and must take it back afterwards, which next to busy server
        threads waits for the holder: tokenising 16 queries took 0.5 ms alone, 6.6 ms next to one
        busy Python thread and 22 ms next to three, but 1.6 and 3.7 ms one text at a time. In the
        server at 64 clients the batch call took 25 ms of each 16-query pass. Large batches keep
        the batch call, whose parallelism pays for the wait.
        """
        if self._single is None or len(texts) > PER_TEXT_TOKENIZE_MAX:
            return self._tokenizer(list(texts), truncation=True, max_length=self._max_length, padding=False)
        encodings = [self._single.encode(text) for text in texts]
        return {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
                "token_type_ids": [e.type_ids for e in encodings]}

    def _goes_to_bulk(self, rows: int, width: int) -> bool:
        """Whether a batch is big enough for the bulk runner to beat the fp32 one."""
        return (self.bulk is not None and rows * width >= self._bulk_min_tokens
                and rows >= self.bulk.parallel_rows)

    def _feed(self, encoded: Any, lengths: list[int], rows: list[int]) -> dict[str, np.ndarray]:
        """The model inputs of one batch, padded to its longest text."""
        width = lengths[rows[0]]
        feed = {}
        for name in self._names:
            array = np.full((len(rows), width), self._pad_id if name == "input_ids" else 0, dtype=np.int64)
            for r, i in enumerate(rows):
                array[r, : lengths[i]] = encoded[name][i]
            feed[name] = array
        return feed


class OnnxEncoder(BatchedEncoder):
    """The exported model at ``path`` run by ONNX Runtime for every batch, fp32."""

    def __init__(self, path: Path, tokenizer: Any, max_length: int) -> None:
        super().__init__(tokenizer, max_length, OnnxRunner(path))


def _single_text_tokenizer(tokenizer: Any, max_length: int) -> Any:
    """A private copy of a fast tokenizer's Rust core that truncates like ``tokenizer(..., truncation=True)``
    and never pads, or None for a tokenizer without one (then every batch goes through ``tokenizer``)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not set(tokenizer.model_input_names) <= {"input_ids", "attention_mask", "token_type_ids"}:
        return None
    # A copy: truncation and padding are state of the Rust tokenizer, and the shared one is configured
    # per call by the transformers wrapper from other threads.
    single = copy.deepcopy(backend)
    single.no_padding()
    single.enable_truncation(max_length, strategy="longest_first", direction=tokenizer.truncation_side)
    return single


def length_batches(order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
    """Split texts sorted longest first into batches that pad little.

    A batch is padded to its longest text, so one 250-word-piece chunk in a batch of 30-piece
    sentences makes the model do ~8x the work. A new batch starts at ``batch_size`` texts or when a
    text is under half as long as the batch's first: padding stays under 2x. On the texts Freki
    embeds while indexing 300 SciFact abstracts (chunks and sentences of several documents per
    call) this cut encoding from 74 s to 34 s against fixed batches of 32.
    """
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < batch_size and 2 * lengths[i] >= lengths[batches[-1][0]]:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def build_encoder(
    model: SentenceTransformer, *, backend: str, device: str, model_path: str, cache_dir: Path,
    max_length: int, bulk_bf16: bool = True,
) -> Encoder:
    """The encoder to use: ONNX when asked for, on CPU, exportable and equivalent; else torch.

    With ``bulk_bf16`` the ONNX encoder hands large batches to a bf16 runner when the CPU has
    native bf16 and the runner passes the probe check.
    """
    torch_encoder = TorchEncoder(model)
    if backend == "torch":
        return torch_encoder
    if device != "cpu":
        log.info("embedding on %s: using torch (the ONNX path is CPU-only)", device)
        return torch_encoder
    # torch's probe vectors, computed once for both checks (~130 ms) and only when a check runs.
    reference = functools.cache(lambda: probe_vectors(torch_encoder))
    onnx = _checked_runner(lambda: OnnxRunner(export_onnx(model, model_path, cache_dir)), reference, model,
                           max_length, what="ONNX embedding", instead="using torch")
    if onnx is None:
        return torch_encoder
    bulk = None
    if bulk_bf16 and not native_bf16():
        log.info("no native bf16 on this CPU: indexing batches run in fp32")
    elif bulk_bf16:
        bulk = _checked_runner(lambda: TorchBf16Runner(model), reference, model, max_length,
                               what=f"bf16 embedding (batches of >= {BULK_MIN_TOKENS} tokens)",
                               instead="indexing batches run in fp32")
    return BatchedEncoder(model.tokenizer, max_length, onnx, bulk=bulk)


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


def native_bf16() -> bool:
    """Whether torch (oneDNN) has native bf16 kernels on this CPU; emulated bf16 is slower than fp32."""
    import torch

    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without the check
        return False


def probe_vectors(encoder: Encoder) -> np.ndarray:
    """The encoder's vectors for ``PROBE_TEXTS``."""
    return encoder.encode(PROBE_TEXTS, batch_size=len(PROBE_TEXTS))


def probe_cosine(reference: Encoder | np.ndarray, candidate: Encoder) -> float:
    """The lowest cosine over ``PROBE_TEXTS`` between the candidate's vectors and the reference's
    (an encoder, or its ``probe_vectors``)."""
    a = reference if isinstance(reference, np.ndarray) else probe_vectors(reference)
    b = probe_vectors(candidate)
    return float(np.min(np.sum(a * b, axis=1)))


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/freki`` (``~/.cache/freki``): a cache, safe to delete."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "freki"


def export_onnx(model: SentenceTransformer, model_path: str, cache_dir: Path) -> Path:
    """Path of the model's ONNX export in ``cache_dir``, exporting it first if missing."""
    target = Path(cache_dir) / "onnx" / f"{_cache_key(model_path)}.onnx"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("exporting the embedding model to ONNX: %s", target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.stem, suffix=".tmp")
    os.close(fd)
    try:
        _export(model, Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared by service users
        os.replace(tmp, target)  # atomic: a concurrent reader sees no file or a whole one
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _cache_key(model_path: str) -> str:
    """Changes when the model's files, torch (the exporter) or EXPORT_FORMAT change."""
    import torch

    digest = hashlib.sha256(f"{EXPORT_FORMAT}|{torch.__version__}|{model_path}".encode())
    root = Path(model_path)
    if root.is_dir():
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            stat = file.stat()
            digest.update(f"|{file.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{root.name or 'model'}-{digest.hexdigest()[:16]}"


def _pipeline(model: SentenceTransformer) -> torch.nn.Module:
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


def _export(model: SentenceTransformer, path: Path) -> None:
    import torch

    names = list(model.tokenizer.model_input_names)
    sample = model.tokenizer(["an example", "a somewhat longer example text"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    # The tracer warns about every data-dependent branch of the model code; the probe check in
    # build_encoder is what decides whether the export is right.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _pipeline(model).eval(), tuple(sample[n] for n in names), str(path), input_names=names,
            output_names=["sentence_embedding"], dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17, dynamo=False,
        )
