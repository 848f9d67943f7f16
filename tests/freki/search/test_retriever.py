"""Retriever behaviour on the real embedded Qdrant engine with hand-made vectors (no model needed)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from freki.embed.sparse import SparseEncoder
from freki.search import fusion
from freki.search.retrieval import Query, RetrievalConfig, Retriever
from freki.store import ChunkPoint, CollectionSpec, EdgeStore, FieldMatch

QUERY_VECTOR = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
TEXTS = {  # chunk id suffix -> (text, dense direction)
    "1": ("pump maintenance schedule", [0.9, 0.1, 0.0, 0.0]),
    "2": ("cooling fan replacement", [0.8, 0.3, 0.1, 0.0]),
    "3": ("error E4417 valve blocked", [0.1, 0.2, 0.9, 0.3]),  # lexical match, dense far
    "4": ("garden tools", [0.0, 0.0, 0.2, 1.0]),
}


def unit(v: list[float]) -> list[float]:
    a = np.asarray(v, dtype=np.float32)
    return (a / np.linalg.norm(a)).tolist()


@pytest.fixture
def retriever(tmp_path: Path) -> Iterator[Retriever]:
    store = EdgeStore(tmp_path / "edge")
    store.ensure_collection(CollectionSpec("c", dense_dim=4, embedding_model="test"))
    enc = SparseEncoder()
    store.upsert([
        ChunkPoint(f"00000000-0000-0000-0000-00000000000{k}", unit(vec), enc.encode_passage(text),
                   {"tenant_id": "t", "document_id": f"doc{k}", "content": text})
        for k, (text, vec) in TEXTS.items()
    ])
    try:
        # candidates=2: the dense list holds only docs 1-2, so doc 3 is lexical-only.
        yield Retriever(embed_query=lambda _t, _s="": QUERY_VECTOR, chunks=store, sparse=enc,
                        config=RetrievalConfig(candidates=2, sparse_weight=0.4))
    finally:
        store.close()


def test_lexical_only_hits_get_their_exact_cosine(retriever: Retriever) -> None:
    hits = retriever.retrieve(Query("t", "E4417", top_k=3, score_threshold=0.0, mode="hybrid"))
    by_doc = {h.document_id: h.score for h in hits}
    assert "doc3" in by_doc
    cosine = float(np.dot(QUERY_VECTOR, unit(TEXTS["3"][1])))
    lexical = by_doc["doc3"] - 0.6 * cosine
    assert 0.0 < lexical / 0.4 < 1.0  # the rest is lexical relevance in (0, 1)
    # The bound used while ranking (the lowest dense cosine, ~0.93) would have scored it far higher.
    assert by_doc["doc3"] < 0.6 * fusion.dense_relevance(float(np.dot(QUERY_VECTOR, unit(TEXTS["2"][1]))))


def test_tenant_filter_isolates(retriever: Retriever) -> None:
    assert retriever.retrieve(Query("other", "pump", top_k=3, score_threshold=0.0, mode="hybrid")) == []


def test_sparse_mode_with_only_stop_words_returns_nothing(retriever: Retriever) -> None:
    assert retriever.retrieve(Query("t", "what is the", top_k=3, score_threshold=0.0, mode="sparse")) == []


def test_unknown_mode_is_an_error(retriever: Retriever) -> None:
    with pytest.raises(ValueError, match="unknown search mode"):
        retriever.retrieve(Query("t", "pump", top_k=3, score_threshold=0.0, mode="fuzzy"))


def test_hybrid_hits_carry_their_payloads(retriever: Retriever) -> None:
    """Fusion runs in the engine, which returns the fused top with payloads: every hit has its own."""
    hits = retriever.retrieve(Query("t", "pump maintenance", top_k=4, score_threshold=0.0, mode="hybrid"))
    assert [h.document_id for h in hits][:1] == ["doc1"]
    assert all(h.payload["content"] == TEXTS[h.document_id[-1]][0] for h in hits)


def test_a_candidate_deleted_after_the_search_is_skipped_not_returned_empty(retriever: Retriever) -> None:
    """A document removed between the candidate search and the payload load (a concurrent delete)."""
    store = retriever.lanes[0].chunks
    search_convex = store.search_convex

    def search_then_delete(*args, **kwargs):  # type: ignore[no-untyped-def]
        hits = search_convex(*args, **kwargs)
        store.delete_where([FieldMatch("document_id", ("doc1",))])
        return hits

    racing = type("Racing", (), {  # the real store, with a delete racing the search
        "search_convex": staticmethod(search_then_delete),
        "__getattr__": lambda self, name: getattr(store, name),
    })()
    retriever.lanes[0] = replace(retriever.lanes[0], chunks=racing)
    # Two query variants: their lists (candidates=2 > top_k=1) carry no payloads, so doc1's is loaded after the
    # delete.
    hits = retriever.retrieve(Query("t", "pump maintenance", top_k=1, score_threshold=0.0, mode="hybrid",
                                    variants=("maintenance of the pump",)))
    assert [h.document_id for h in hits] == ["doc2"]  # the next candidate takes the deleted one's place
    assert hits[0].payload["content"] == TEXTS["2"][0]
