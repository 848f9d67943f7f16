"""What the engine needs of an embedding model, in-process (``embedder.Embedder``) or on a server
(``remote.RemoteEmbedder``): one interface, two implementations, chosen by ``freki.engine.config.build_embedder``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from freki.embed.embedder import ModelIdentity


class EmbeddingModel(Protocol):
    """A dense embedding model: unit vectors, so dot product = cosine."""

    identity: ModelIdentity
    batch_size: int
    # The model's input window, special tokens included; chunks are kept under it (``window_tokens``).
    max_seq_length: int
    texts_embedded: int

    @property
    def dimension(self) -> int: ...

    @property
    def backend(self) -> str: ...

    @property
    def cache_hits(self) -> int: ...

    @property
    def cache_misses(self) -> int: ...

    def window_tokens(self, text: str) -> int:
        """Tokens ``text`` takes of the window, special tokens included."""
        ...

    def embed(self, texts: Sequence[str], *, urgent: bool = False, tenant: str = "") -> np.ndarray:
        """Documents or sentences -> ``(n, dim)`` float32 unit vectors; ``urgent``: a query someone waits on;
        ``tenant``: whose indexing this is (tenants share the model round robin)."""
        ...

    def embed_query(self, text: str, scope: str = "") -> np.ndarray:
        """One query's vector (cached per ``scope``, the asking tenant)."""
        ...

    def enable_batching(self, max_batch: int = 64, max_wait_s: float = 0.0) -> None:
        """Merge concurrent calls into shared passes."""
        ...
