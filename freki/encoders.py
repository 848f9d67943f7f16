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

int8 quantisation (onnxruntime dynamic, per channel) was measured and rejected: 1.5x faster than
fp32 ONNX but cosine to fp32 down to 0.988 on short sentences, below the 0.99 equivalence bar.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("freki.encoders")

# Bump when the exported graph changes shape or meaning, so stale cache files are not reused.
EXPORT_FORMAT = 1
MIN_PROBE_COSINE = 0.99
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


class OnnxEncoder:
    """The exported model run by ONNX Runtime on CPU, with the model's own (fast) tokenizer."""

    name = "onnx"

    def __init__(self, path: Path, tokenizer: Any, max_length: int) -> None:
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
        self._tokenizer = tokenizer
        self._pad_id = int(tokenizer.pad_token_id or 0)
        self._max_length = max_length
        self.path = path

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        encoded = self._tokenizer(list(texts), truncation=True, max_length=self._max_length, padding=False)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        out: np.ndarray | None = None
        for rows in length_batches(order, lengths, batch_size):
            width = lengths[rows[0]]
            feed = {}
            for name in self._inputs:
                pad = self._pad_id if name == "input_ids" else 0
                array = np.full((len(rows), width), pad, dtype=np.int64)
                for r, i in enumerate(rows):
                    array[r, : lengths[i]] = encoded[name][i]
                feed[name] = array
            vectors = self._session.run(None, feed)[0]
            if out is None:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        assert out is not None, "encode() needs at least one text"
        return out


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
    max_length: int,
) -> Encoder:
    """The encoder to use: ONNX when asked for, on CPU, exportable and equivalent; else torch."""
    torch_encoder = TorchEncoder(model)
    if backend == "torch":
        return torch_encoder
    if device != "cpu":
        log.info("embedding on %s: using torch (the ONNX path is CPU-only)", device)
        return torch_encoder
    try:
        path = export_onnx(model, model_path, cache_dir)
        onnx_encoder = OnnxEncoder(path, model.tokenizer, max_length)
        cosine = probe_cosine(torch_encoder, onnx_encoder)
    except Exception as exc:  # export/trace/runtime errors of every kind mean "use torch"
        log.warning("ONNX embedding unavailable (%s: %s); using torch", type(exc).__name__, exc)
        return torch_encoder
    if cosine < MIN_PROBE_COSINE:
        log.warning("ONNX embeddings differ from torch (min probe cosine %.4f < %.2f); using torch",
                    cosine, MIN_PROBE_COSINE)
        return torch_encoder
    log.info("embedding with ONNX Runtime (%s; min probe cosine to torch %.6f)", path.name, cosine)
    return onnx_encoder


def probe_cosine(reference: Encoder, candidate: Encoder) -> float:
    """The lowest cosine between the two encoders' vectors over ``PROBE_TEXTS``."""
    a = reference.encode(PROBE_TEXTS, batch_size=len(PROBE_TEXTS))
    b = candidate.encode(PROBE_TEXTS, batch_size=len(PROBE_TEXTS))
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


def _export(model: SentenceTransformer, path: Path) -> None:
    import torch

    names = list(model.tokenizer.model_input_names)
    sample = model.tokenizer(["an example", "a somewhat longer example text"], padding=True, return_tensors="pt")

    class _Pipeline(torch.nn.Module):
        """Every sentence-transformers module in order, then L2 normalisation (as encode() does)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            features: dict[str, torch.Tensor] = dict(zip(names, inputs, strict=True))
            for module in self.model:
                features = module(features)
            return torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)

    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    # The tracer warns about every data-dependent branch of the model code; the probe check in
    # build_encoder is what decides whether the export is right.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Pipeline().eval(), tuple(sample[n] for n in names), str(path), input_names=names,
            output_names=["sentence_embedding"], dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17, dynamo=False,
        )
