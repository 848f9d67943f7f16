"""Incremental re-indexing with the real model and Qdrant engine: only changed chunks are embedded."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput, document_filter
from freki.settings import FrekiSettings
from freki.store import FieldMatch, SparseVector
from tests.freki.watch.conftest import paragraphs

pytestmark = pytest.mark.integration
T = "acme"


def make_engine(data_dir: Path, embedder, **overrides: object) -> FrekiEngine:  # type: ignore[no-untyped-def]
    settings = FrekiSettings(
        data_dir=data_dir, chunking={"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        **overrides,  # type: ignore[arg-type]
    )
    return FrekiEngine(settings, embedder=embedder)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[FrekiEngine]:  # type: ignore[no-untyped-def]
    made = make_engine(tmp_path_factory.mktemp("incremental"), embedder)
    try:
        yield made
    finally:
        made.close()


def doc(document_id: str, text: str, **kw: object) -> IndexInput:
    return IndexInput(tenant_id=T, document_id=document_id, data=text, source=f"{document_id}.txt", **kw)  # type: ignore[arg-type]


def stored(engine: FrekiEngine, document_id: str) -> dict[str, tuple[str, np.ndarray]]:
    """chunk text hash -> (content, vector). Ids change with each version (generation); text and vectors stay."""
    return {str(p.payload["chunk_hash"]): (str(p.payload["content"]), np.asarray(p.dense))
            for p in engine.chunks_of(T, document_id, with_vectors=True)}


def test_editing_one_paragraph_of_a_100_chunk_document_embeds_at_most_3_chunks(engine: FrekiEngine) -> None:
    text = paragraphs("caribou", 100)
    first = engine.index(doc("big", text))
    assert first.outcome == "created" and first.chunk_count >= 100, first
    before = stored(engine, "big")

    edited = text.replace("record number 57 notes", "record number 57 (revised after recount) notes")
    result = engine.index(doc("big", edited))

    assert result.outcome == "updated" and not result.full_reindex
    assert 1 <= result.chunks_embedded <= 3 and result.chunks_deleted == result.chunks_embedded, result
    after = stored(engine, "big")
    assert len(after) == result.chunk_count == first.chunk_count
    kept = set(before) & set(after)
    assert len(kept) == result.chunks_unchanged >= first.chunk_count - 3
    assert all(np.array_equal(before[i][1], after[i][1]) for i in kept), "unchanged chunks keep their vectors"
    assert any("revised after recount" in c for c, _ in after.values())
    assert not any("revised after recount" in before[i][0] for i in kept)


def test_reindexing_unchanged_content_is_a_no_op(engine: FrekiEngine) -> None:
    text = paragraphs("ptarmigan", 6)
    engine.index(doc("same", text))
    ids = set(stored(engine, "same"))
    embedded = engine.embedder.texts_embedded
    for _ in range(3):
        result = engine.index(doc("same", text))
        assert result.outcome == "unchanged" and result.chunks_embedded == 0
    assert engine.embedder.texts_embedded == embedded, "no embedding at all, not even sentences"
    assert set(stored(engine, "same")) == ids
    assert engine.chunks.count([FieldMatch("document_id", ("same",))]) == len(ids), "no duplicates"


def test_more_than_half_changed_triggers_a_full_reindex_and_the_ratio_is_configurable(
    engine: FrekiEngine, tmp_path: Path, embedder,  # type: ignore[no-untyped-def]
) -> None:
    engine.index(doc("mostly", paragraphs("seals", 6)))
    rewritten = paragraphs("walrus", 4) + "\n\n" + "\n\n".join(paragraphs("seals", 6).split("\n\n")[4:])
    result = engine.index(doc("mostly", rewritten))
    assert result.full_reindex and result.chunks_embedded == result.chunk_count and result.chunks_unchanged == 0

    lenient = make_engine(tmp_path / "lenient", embedder, full_reindex_ratio=0.95)
    try:
        lenient.index(doc("mostly", paragraphs("seals", 6)))
        result = lenient.index(doc("mostly", rewritten))
        assert not result.full_reindex and 0 < result.chunks_unchanged < result.chunk_count
    finally:
        lenient.close()


def test_full_reindex_re_embeds_every_chunk_in_place(engine: FrekiEngine) -> None:
    engine.index(doc("again", paragraphs("lemmings", 5)))
    before = stored(engine, "again")
    report = engine.full_reindex(T, "again")
    assert (report.documents, report.chunks, report.rechunked, report.reembedded_only) == (1, len(before), 1, 0)
    after = stored(engine, "again")
    assert set(after) == set(before), "a re-chunk with unchanged settings replaces, never duplicates"
    forced = engine.index(doc("again", paragraphs("lemmings", 5), force_full_reindex=True))
    assert forced.chunks_embedded == forced.chunk_count == len(before)
    assert set(stored(engine, "again")) == set(before)


def test_readers_never_see_a_half_updated_document(engine: FrekiEngine) -> None:
    base = paragraphs("foxes", 6).split("\n\n")
    version_a = "\n\n".join(base)
    version_b = "\n\n".join(base[:2] + [p.replace("Weather", "Observed weather") for p in base[2:4]] + base[4:])
    engine.index(doc("flip", version_b))
    set_b = frozenset(c for c, _ in stored(engine, "flip").values())
    engine.index(doc("flip", version_a))
    set_a = frozenset(c for c, _ in stored(engine, "flip").values())
    assert set_a != set_b and set_a & set_b, "the versions share some chunks and differ in others"

    scope = [FieldMatch("tenant_id", (T,)), FieldMatch("document_id", ("flip",))]
    probe = engine.embedder.embed(["observers counted animals near the lake"])[0].tolist()
    stop, seen, bad = threading.Event(), [0], []

    def read() -> None:
        while not stop.is_set():
            hits = engine.chunks.search_dense(probe, scope, limit=100)
            page, _ = engine.chunks.scroll(scope, limit=100)
            for got in (frozenset(str(h.payload["content"]) for h in hits),
                        frozenset(str(p.payload["content"]) for p in page)):
                seen[0] += 1
                if got not in (set_a, set_b):
                    bad.append(got)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for r in readers:
        r.start()
    try:
        for i in range(16):
            result = engine.index(doc("flip", version_b if i % 2 == 0 else version_a))
            assert result.outcome == "updated" and not result.full_reindex
    finally:
        stop.set()
        for r in readers:
            r.join()
    assert seen[0] > 50 and not bad, f"{len(bad)} of {seen[0]} reads saw a mix of versions"


def sparse_by_chunk(engine: FrekiEngine, document_id: str) -> list[tuple[dict, object]]:  # type: ignore[type-arg]
    page, _ = engine.chunks.scroll(document_filter(T, document_id), limit=512, with_sparse=True)
    return [(p.payload, p.sparse) for p in sorted(page, key=lambda p: int(p.payload["chunk_index"]))]


def same_vector(stored: object, expected: SparseVector) -> bool:
    """Equal up to the store's float32 weights."""
    assert isinstance(stored, SparseVector)
    return stored.indices == expected.indices and np.allclose(stored.values, expected.values, rtol=1e-6)


def test_overlap_is_indexed_once_by_bm25_and_stays_so_after_a_full_reindex(engine: FrekiEngine) -> None:
    """003: overlap not indexed twice. The dense vector sees the overlap (context), BM25 does not."""
    engine.index(doc("overlapping", paragraphs("wolverine", 12)))
    chunks = sparse_by_chunk(engine, "overlapping")
    overlapping = [(payload, sparse) for payload, sparse in chunks if payload["overlap_chars"]]
    assert len(chunks) >= 3 and len(overlapping) >= len(chunks) // 2, [p["overlap_chars"] for p, _ in chunks]
    assert chunks[0][0]["overlap_chars"] == 0
    for payload, sparse in overlapping:
        content, overlap = str(payload["content"]), int(payload["overlap_chars"])
        assert same_vector(sparse, engine.sparse.encode_passage(content[overlap:], "", T))
        assert not same_vector(sparse, engine.sparse.encode_passage(content, "", T))
    engine.full_reindex(T, "overlapping")
    assert all(same_vector(after, before)  # type: ignore[arg-type]
               for (_, after), (_, before) in zip(sparse_by_chunk(engine, "overlapping"), chunks, strict=True))
