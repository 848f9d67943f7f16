"""A chunk whose sparse (BM25) vector changed on disk fails its checksum and is quarantined, with the real engine
(qdrant-edge) under the real sealed store. Dense and payload checks: tests/freki/api/test_corruption.py."""

from __future__ import annotations

import pytest

from freki.engine.healing import scrub
from freki.ingest.indexing import IndexInput
from freki.store.base import ChunkPoint, SparseVector
from freki.store.integrity import QuarantinedChunk, make_check, sparse_digest, verify
from freki.store.sealed import SealedStore


def test_the_digest_is_the_engines_view_of_the_vector() -> None:
    vector = SparseVector([7, 3, 11], [0.1, 2.5, 1.0 / 3])
    assert sparse_digest(vector) == sparse_digest(SparseVector([3, 7, 11], [2.5, 0.1, 1.0 / 3]))  # order
    as_float32 = SparseVector([7, 3, 11], [float(__import__("numpy").float32(v)) for v in vector.values])
    assert sparse_digest(vector) == sparse_digest(as_float32)  # the engine keeps float32 weights
    check = make_check({"a": 1}, [1.0, 0.0], vector)
    assert verify(check, {"a": 1}, [1.0, 0.0], vector) is None
    assert verify(check, {"a": 1}, [1.0, 0.0], SparseVector([7, 3, 11], [0.1, 2.5, 0.4])) == "sparse vector checksum"
    assert verify({k: v for k, v in check.items() if k != "s"}, {"a": 1}, [1.0, 0.0], SparseVector([1], [1.0])) \
        is None  # points written before the sparse check are not checked


@pytest.mark.integration
def test_a_changed_sparse_vector_is_quarantined_not_served(freki_server) -> None:  # type: ignore[no-untyped-def]
    _, engine = freki_server
    engine.index(IndexInput(tenant_id="t-sparse", document_id="lexicon",
                            data=b"Sparse vectors carry the BM25 weight of every term in a chunk.",
                            content_type="text/plain"))
    (chunk,) = engine.chunks_of("t-sparse", "lexicon")
    store = engine.store_of(engine.registry.get("t-sparse", "lexicon").embedding_model)
    while not isinstance(store, SealedStore):
        store = store.inner
    assert store.retrieve([chunk.id], with_sparse=True), "served while intact"

    (raw,) = store.inner.retrieve([chunk.id], with_vectors=True, with_sparse=True)
    assert raw.sparse is not None and raw.sparse.values
    doubled = SparseVector(list(raw.sparse.indices), [v * 2 for v in raw.sparse.values])
    store.inner.apply([ChunkPoint(raw.id, raw.dense, doubled, raw.payload)], [], [])

    found: list[QuarantinedChunk] = []  # heard as it happens: the healer may re-index the document at once
    engine.quarantine.listeners.append(found.append)
    try:
        assert store.retrieve([chunk.id], with_vectors=True), "queries read the dense vector alone"
        scrub(engine)  # the scrub (freki verify, the background pass) reads both vectors
    finally:
        engine.quarantine.listeners.remove(found.append)
    assert [(e.chunk_id, e.reason, e.document_id) for e in found] == [(chunk.id, "sparse vector checksum", "lexicon")]
