"""Caches that make re-indexing an edited document cheap: sentence vectors and model token counts.

Both are bounded and in memory; the sentence cache is keyed per document, so erasing a document
drops its entry (see ``freki.gdpr``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

# Texts per model call when indexing. The model runs one call at a time, so a 100-chunk document in one
# call would hold every query behind it for the whole document; in slices, queries join the next call.
# 32 = sentence-transformers' own batch size; smaller slices cost CPU (docs/decisions/0010-ingest-caches.md).
INDEX_SLICE = 32


def embed_in_slices(
    embed: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str], size: int = INDEX_SLICE
) -> np.ndarray:
    """``embed(texts)`` done ``size`` texts at a time, so concurrent queries are not starved."""
    if len(texts) <= size:
        return embed(texts)
    return np.concatenate([embed(texts[i : i + size]) for i in range(0, len(texts), size)])


class SentenceVectorCache:
    """Sentence embeddings of recently indexed documents, keyed per document.

    Chunking needs an embedding per sentence; keeping them per document makes re-chunking an
    edited document cheap, and makes erasure exact: deleting a document drops its entry.
    """

    # 20,000 sentences = ~34 MiB (a 384-d float32 vector and its key each): the last ~200 documents of 100
    # sentences; edits hit recent documents (docs/decisions/0010-ingest-caches.md).
    def __init__(self, max_sentences: int = 20_000) -> None:
        self._docs: OrderedDict[tuple[str, str], dict[str, np.ndarray]] = OrderedDict()
        self._max = max_sentences
        self._size = 0
        self._lock = threading.Lock()
        self._model: dict[tuple[str, str], str] = {}  # which model made a document's vectors
        # Called with (tenant, document id or None) when a document or tenant is forgotten (deleted, erased), so
        # that other per-document state (the quarantine list) forgets it too.
        self.on_forget: list[Callable[[str, str | None], None]] = []

    def embedder_for(
        self, key: tuple[str, str], embed: Callable[[Sequence[str]], np.ndarray], model: str = ""
    ) -> Callable[[list[str]], np.ndarray]:
        """An ``embed`` callable for the chunker that reuses and refreshes this document's vectors.

        Vectors another ``model`` made (the document's type now routes elsewhere) are not reused."""

        def embed_sentences(sentences: list[str]) -> np.ndarray:
            with self._lock:
                old = self._docs.get(key, {}) if self._model.get(key, "") == model else {}
            missing = sorted({s for s in sentences if s not in old})
            fresh = dict(zip(missing, embed_in_slices(embed, missing), strict=True)) if missing else {}
            vectors = {s: old[s] if s in old else fresh[s] for s in sentences}
            with self._lock:
                self._size -= len(self._docs.pop(key, {}))
                self._docs[key] = vectors
                self._model[key] = model
                self._size += len(vectors)
                while self._size > self._max and len(self._docs) > 1:
                    gone, dropped = self._docs.popitem(last=False)
                    self._model.pop(gone, None)
                    self._size -= len(dropped)
            if not sentences:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([vectors[s] for s in sentences])

        return embed_sentences

    def forget(self, tenant: str, document_id: str | None = None) -> None:
        """Drop cached vectors of one document, or of every document of a tenant."""
        with self._lock:
            for key in [k for k in self._docs if k[0] == tenant and (document_id is None or k[1] == document_id)]:
                self._size -= len(self._docs.pop(key))
                self._model.pop(key, None)
        for listener in self.on_forget:
            listener(tenant, document_id)

    def rename(self, tenant: str, old_id: str, new_id: str) -> None:
        """Carry a renamed document's sentence vectors over, so re-chunking it embeds nothing."""
        with self._lock:
            vectors = self._docs.pop((tenant, old_id), None)
            model = self._model.pop((tenant, old_id), "")
            if vectors is not None:
                self._size -= len(self._docs.pop((tenant, new_id), {}))
                self._docs[(tenant, new_id)] = vectors
                self._model[(tenant, new_id)] = model


class TokenCountCache:
    """Bounded LRU of model token counts, keyed by a digest of the text (so it holds no content).

    The chunker counts model tokens of every sentence and candidate chunk; for an edited document
    almost all of them are the same as last time, and tokenizing them again would dominate an
    incremental re-index (docs/decisions/0010-ingest-caches.md).
    """

    # ~170 bytes an entry; two of these live in a server (tiktoken and model counts). 50,000 each = ~17 MiB
    # together and covers the sentences and chunks of ~40 large documents.
    def __init__(self, count: Callable[[str], int], max_entries: int = 50_000) -> None:
        self._count = count
        self._max = max_entries
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            found = self._counts.get(key)
            if found is not None:
                self._counts.move_to_end(key)
                return found
        value = self._count(text)
        with self._lock:
            self._counts[key] = value
            if len(self._counts) > self._max:
                self._counts.popitem(last=False)
        return value

    # As a tiktoken counter for the chunker (``CountsTokens``): it counts every sentence of an edited
    # document again.
    count = __call__
