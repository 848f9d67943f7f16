"""Test data for the vector store tests: deterministic points, vectors and collection specs."""

from __future__ import annotations

import random
import uuid

from freki.store import ChunkPoint, CollectionSpec, SparseVector

DIM = 16
MODEL = "test-model-v1"
TENANTS = ("acme", "globex")
LANGS = ("en", "de", "fr")


def spec(name: str = "chunks", dim: int = DIM, model: str = MODEL, sparse: bool = True) -> CollectionSpec:
    """A collection spec with test defaults."""
    return CollectionSpec(name=name, dense_dim=dim, embedding_model=model, sparse=sparse)


def random_dense(rng: random.Random, dim: int = DIM) -> list[float]:
    """A random non-zero dense vector."""
    return [rng.uniform(-1.0, 1.0) for _ in range(dim)]


def random_sparse(rng: random.Random, vocab: int = 40, terms: int = 5) -> SparseVector:
    """A random sparse vector over a small vocabulary, so terms are shared between points (IDF matters)."""
    indices = sorted(rng.sample(range(vocab), terms))
    return SparseVector(indices=indices, values=[round(rng.uniform(0.1, 2.0), 3) for _ in indices])


def make_points(n: int, seed: int = 7, document_id: str | None = None, tenant: str | None = None) -> list[ChunkPoint]:
    """``n`` deterministic points spread over tenants, documents, owners and languages."""
    rng = random.Random(seed)
    points = []
    for i in range(n):
        payload = {
            "tenant_id": tenant or TENANTS[i % 2],
            "document_id": document_id or f"doc-{i % 5}",
            "owner_id": f"owner-{i % 3}",
            "source_type": "pdf" if i % 4 == 0 else "markdown",
            "chunk_hash": f"h{i}",
            "chunk_index": i,
            "is_public": i % 3 == 0,
            "score_hint": i / 10,
            "metadata": _metadata(i),
            "metadata_num": {"page": float(i % 7), "ratings": [float(i % 5), float(i % 11)]},
        }
        pid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        points.append(ChunkPoint(pid, random_dense(rng), random_sparse(rng), payload))
    return points


def _metadata(i: int) -> dict[str, object]:
    """Scalar and list metadata; every fifth point also sets its own ``source_type`` (shadowing the system one)."""
    meta: dict[str, object] = {"lang": LANGS[i % 3], "title": f"T{i}", "topics": [TOPICS[j] for j in TOPIC_SETS[i % 4]]}
    if i % 5 == 0:
        meta["source_type"] = "docs"
    if i % 6 == 0:
        meta["topics"] = []
    return meta


TOPICS = ("health", "diet", "care")
TOPIC_SETS = ((0, 1), (1,), (0, 2), (0, 1, 2))
