"""Contextual chunk headers with the real model and Qdrant engine: the header reaches the embedding input,
not the stored text; a new title re-embeds; re-embedding stored chunks keeps the header."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.settings import FrekiSettings
from freki.store import StoredPoint
from tests.freki.watch.conftest import paragraphs

pytestmark = pytest.mark.integration
T = "acme"
TEXT = paragraphs("kestrel", 6)


def make_engine(data_dir: Path, embedder, **chunking: object) -> FrekiEngine:  # type: ignore[no-untyped-def]
    settings = FrekiSettings(
        data_dir=data_dir, reindex={"keep_sources": False},  # type: ignore[arg-type]
        chunking={"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20, **chunking},  # type: ignore[arg-type]
    )
    return FrekiEngine(settings, embedder=embedder)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[FrekiEngine]:  # type: ignore[no-untyped-def]
    made = make_engine(tmp_path_factory.mktemp("headers"), embedder)
    try:
        yield made
    finally:
        made.close()


def doc(document_id: str, title: str) -> IndexInput:
    return IndexInput(tenant_id=T, document_id=document_id, data=TEXT, metadata={"title": title})


def cosine_to(engine: FrekiEngine, point: StoredPoint, text: str) -> float:
    return float(np.dot(np.asarray(point.dense), engine.embedder.embed([text])[0]))


def test_the_title_reaches_the_embedding_input_not_the_stored_text(engine: FrekiEngine) -> None:
    result = engine.index(doc("survey", "Raptor census of the northern fjords"))
    points = engine.chunks_of(T, "survey", with_vectors=True)
    assert result.chunk_count == len(points) >= 3
    for point in points:
        content = str(point.payload["content"])
        assert "Raptor census" not in content
        assert point.payload["context_header"] == "Raptor census of the northern fjords"
        assert cosine_to(engine, point, f"Raptor census of the northern fjords\n\n{content}") > 0.999
        assert cosine_to(engine, point, content) < 0.99, "the vector is not the bare text's"


def test_a_new_title_re_embeds_every_chunk(engine: FrekiEngine) -> None:
    engine.index(doc("renamed", "Raptor census of the northern fjords"))
    before = {p.payload["chunk_index"]: np.asarray(p.dense) for p in engine.chunks_of(T, "renamed", with_vectors=True)}
    result = engine.index(doc("renamed", "Seabird colonies"))
    assert result.outcome == "updated" and result.chunks_embedded == result.chunk_count == len(before)
    for point in engine.chunks_of(T, "renamed", with_vectors=True):
        assert not np.allclose(before[point.payload["chunk_index"]], np.asarray(point.dense), atol=1e-3)
        assert cosine_to(engine, point, f"Seabird colonies\n\n{point.payload['content']}") > 0.999


def test_re_embedding_stored_chunks_keeps_the_header(engine: FrekiEngine) -> None:
    engine.index(doc("stored", "Raptor census of the northern fjords"))
    before = {p.payload["chunk_index"]: np.asarray(p.dense) for p in engine.chunks_of(T, "stored", with_vectors=True)}
    report = engine.full_reindex(T, "stored")
    assert report.reembedded_only == 1, "no kept source: the stored chunk texts are re-embedded"
    after = {p.payload["chunk_index"]: np.asarray(p.dense) for p in engine.chunks_of(T, "stored", with_vectors=True)}
    assert after.keys() == before.keys()
    assert all(float(np.dot(before[i], after[i])) > 0.999 for i in before)


def test_with_headers_off_the_vector_is_the_bare_text(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    plain = make_engine(tmp_path, embedder, context_header=False)
    try:
        plain.index(doc("survey", "Raptor census of the northern fjords"))
        for point in plain.chunks_of(T, "survey", with_vectors=True):
            assert point.payload["context_header"] == ""
            assert cosine_to(plain, point, str(point.payload["content"])) > 0.999
    finally:
        plain.close()
