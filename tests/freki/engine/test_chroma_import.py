"""``freki import-chroma`` with a real embedded chromadb collection made in the test, into a real Freki engine
(real model, Qdrant engine): vectors stored as they are, BM25 computed, metadata kept; a corrupt collection or
a mismatched model or dimension is refused clearly and changes nothing (neither Freki nor the collection)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from freki.cli import main as freki_cli
from freki.engine import FrekiEngine
from freki.engine.chroma_import import import_chroma
from freki.ingest.chroma import ChromaImportError
from freki.search.retrieval import Query
from freki.store import FieldMatch
from tests.freki.conftest import freki_settings

chromadb = pytest.importorskip("chromadb")
from chromadb.utils.embedding_functions import (  # noqa: E402
    EmbeddingFunction,
    register_embedding_function,
)

pytestmark = pytest.mark.integration
TENANT = "pets"
RECORDS = [  # seed 002's schema: one collection, chunks with source_file, doc_type, breed, chunk_index
    ("gr-0", "Golden Retrievers are prone to hip dysplasia and need joint checks.", "breeds/golden.md", "breed",
     "golden_retriever", 0),
    ("gr-1", "A Golden Retriever sheds heavily twice a year; brush it with an undercoat rake.", "breeds/golden.md",
     "breed", "golden_retriever", 1),
    ("mc-0", "Maine Coon cats grow slowly and reach full size at four years.", "breeds/maine_coon.md", "breed",
     "maine_coon", 0),
    ("vax-0", "Puppies get their first vaccination against parvovirus at eight weeks.", "health/vaccines.md",
     "health", "", 0),
]


@register_embedding_function
class MpnetNamed(EmbeddingFunction):  # type: ignore[type-arg]
    """Persists a configuration naming another model; never computes anything (the test gives the vectors)."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Any) -> Any:  # noqa: A002 - chromadb's signature
        raise AssertionError("the test gives its own embeddings")

    @staticmethod
    def name() -> str:
        return "freki_test_mpnet_named"

    def get_config(self) -> dict[str, Any]:
        return {"model_name": "sentence-transformers/all-mpnet-base-v2"}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MpnetNamed:
        return MpnetNamed()


def make_collection(path: Path, vectors: np.ndarray, name: str = "pet_knowledge", **kw: Any) -> None:
    client = chromadb.PersistentClient(path=str(path), settings=chromadb.Settings(anonymized_telemetry=False))
    collection = client.create_collection(name, **kw)
    collection.add(ids=[r[0] for r in RECORDS], documents=[r[1] for r in RECORDS], embeddings=vectors.tolist(),
                   metadatas=[{"source_file": r[2], "doc_type": r[3], "chunk_index": r[5],
                               **({"breed": r[4]} if r[4] else {})} for r in RECORDS])
    client.clear_system_cache()


def digest(path: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())).hexdigest()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[FrekiEngine]:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(freki_settings(tmp_path_factory.mktemp("freki")), embedder=embedder)
    try:
        yield engine
    finally:
        engine.close()


@pytest.fixture(scope="module")
def vectors(embedder) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The model's own embeddings, nudged: what Freki stores must be these, not a re-embedding."""
    real = embedder.embed([r[1] for r in RECORDS])
    nudged = real + np.random.default_rng(7).normal(0, 0.02, real.shape).astype(np.float32)
    return nudged / np.linalg.norm(nudged, axis=1, keepdims=True)


def test_import_keeps_vectors_computes_bm25_and_keeps_metadata(engine, vectors, tmp_path) -> None:  # type: ignore[no-untyped-def]
    make_collection(tmp_path / "chroma", vectors)
    before = digest(tmp_path / "chroma")
    report = import_chroma(engine, tmp_path / "chroma", "pet_knowledge", tenant=TENANT, group_by="source_file")
    assert (report.records, report.documents, report.created, report.dimension) == (4, 3, 3, 384)
    assert report.model == "all-MiniLM-L6-v2"  # Chroma's default embedding function
    assert digest(tmp_path / "chroma") == before, "the Chroma directory is never changed"

    record = engine.registry.get(TENANT, "breeds/golden.md")
    assert record is not None and record.chunk_count == 2
    assert record.metadata["imported_from"] == "chroma:pet_knowledge" and record.metadata["breed"] == "golden_retriever"
    stored = engine.active.retriever.lanes[0].chunks.scroll(
        [FieldMatch("tenant_id", (TENANT,)), FieldMatch("document_id", ("breeds/golden.md",))], 10,
        with_vectors=True)[0]
    by_text = {p.payload["content"]: np.asarray(p.dense) for p in stored}
    for i in (0, 1):
        kept = by_text[RECORDS[i][1]]
        assert float(kept @ vectors[i] / np.linalg.norm(kept)) > 0.9999, "stored as given, not re-embedded"

    sparse = engine.retrieve(Query(TENANT, "undercoat rake", 2, 0.0, mode="sparse"))
    assert sparse and sparse[0].content == RECORDS[1][1], "BM25 vectors were computed"
    dense = engine.retrieve(Query(TENANT, "when are puppies vaccinated", 1, 0.0, mode="dense",
                                  filters=(FieldMatch("metadata.doc_type", ("health",)),)))
    assert dense[0].document_id == "health/vaccines.md"

    again = import_chroma(engine, tmp_path / "chroma", "pet_knowledge", tenant=TENANT, group_by="source_file")
    assert (again.created, again.unchanged) == (0, 3)


def _refused(engine: FrekiEngine, path: Path, *said: str, **kw: Any) -> None:
    count = engine.registry.count()
    with pytest.raises(ChromaImportError) as err:
        import_chroma(engine, path, "pet_knowledge", tenant="refused", **kw)
    for part in said:
        assert part in str(err.value)
    assert engine.registry.count() == count and engine.registry.count("refused") == 0


def test_mismatched_dimension_is_refused_naming_both(engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    small = np.random.default_rng(1).normal(size=(len(RECORDS), 8)).astype(np.float32)
    make_collection(tmp_path / "chroma", small)
    _refused(engine, tmp_path / "chroma", "8-dimensional", "all-MiniLM-L6-v2", "384 dimensions",
             "nothing was imported")


def test_another_model_is_refused_naming_both(engine, vectors, tmp_path) -> None:  # type: ignore[no-untyped-def]
    make_collection(tmp_path / "chroma", vectors, embedding_function=MpnetNamed())
    _refused(engine, tmp_path / "chroma", "'sentence-transformers/all-mpnet-base-v2'", "'all-MiniLM-L6-v2'")
    _refused(engine, tmp_path / "chroma", "'other-model'", model="other-model")


def test_a_corrupt_collection_is_refused_and_left_as_it_was(engine, vectors, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    make_collection(tmp_path / "chroma", vectors)
    sqlite = tmp_path / "chroma" / "chroma.sqlite3"
    sqlite.write_bytes(sqlite.read_bytes()[:4096])  # truncated mid-file
    before = digest(tmp_path / "chroma")
    _refused(engine, tmp_path / "chroma", "cannot be read", "nothing was imported")
    assert digest(tmp_path / "chroma") == before
    _refused(engine, tmp_path / "nowhere", "not a Chroma persistent directory")
    # The command line says the same and exits 1 before loading any model.
    code = freki_cli(["import-chroma", "--path", str(tmp_path / "chroma"), "--collection", "pet_knowledge"])
    assert code == 1 and "cannot be read" in capsys.readouterr().err


def test_records_without_text_are_refused(engine, vectors, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"),
                                       settings=chromadb.Settings(anonymized_telemetry=False))
    client.create_collection("pet_knowledge").add(ids=["only-vector"], embeddings=vectors[:1].tolist())
    client.clear_system_cache()
    _refused(engine, tmp_path / "chroma", "'only-vector' has no document text")
