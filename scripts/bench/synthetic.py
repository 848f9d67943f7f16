"""Freki data dirs synthesised from real indexed SciFact chunks, for latency and scale figures at 10k and 100k
chunks (embedding 100k real chunks takes hours on a 2-core box).
"""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path

import numpy as np

from freki.embed.embedder import ModelIdentity
from freki.embed.sparse import SparseEncoder
from freki.ingest.indexing import CHUNK_SEALED_FIELDS
from freki.ingest.registry import DocumentRecord, DocumentRegistry
from freki.store import ChunkPoint, CollectionSpec, EdgeStore, StoredPoint
from freki.store.keys import KeyStore
from freki.store.sealed import SealedStore
from scripts.common import CACHE
from scripts.evalsets.harness import eval_settings, shared_embedder

BENCH_CACHE = CACHE.parent / "freki-bench"


def complete_seed_dir(preferred: Path | None = None) -> Path | None:
    """A completely indexed SciFact cache to take real chunks from: ``preferred`` (the current code's) when it
    is complete, else the newest complete one (its key changes with the index code; seed chunks only need to be
    real ones); None when there is none."""
    if preferred is not None and (preferred / "eval-complete.json").exists():
        return preferred
    found = sorted(CACHE.glob("scifact-*/eval-complete.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def seed_points(seed_dir: Path, collection: str = "freki_chunks") -> list[StoredPoint]:
    """Every chunk (with its vectors, payload unsealed) of an indexed Freki data dir."""
    keys = KeyStore(seed_dir / "keys.sqlite")
    store = SealedStore(EdgeStore(seed_dir / "qdrant"), keys, CHUNK_SEALED_FIELDS)
    try:
        identity = shared_embedder(eval_settings(Path("."))).identity
        store.ensure_collection(CollectionSpec(collection, identity.dimension, identity.name))
        points: list[StoredPoint] = []
        offset: str | None = None
        while True:
            page, offset = store.scroll([], limit=1000, offset=offset, with_vectors=True)
            points.extend(page)
            if offset is None:
                if not points or "content" not in points[0].payload:
                    sys.exit(f"the seed index {seed_dir} yields no readable chunks")
                return points
    finally:
        store.close()
        keys.close()


def synth_dir(size: int, seeds: int | str) -> Path:
    """Where ``synthesise`` keeps a collection of ``size`` chunks made from ``seeds`` real ones ("*": any)."""
    return BENCH_CACHE / f"synth-v2-{size}-{seeds}"


def synthesise(size: int, seed: list[StoredPoint], identity: ModelIdentity) -> Path:
    """A Freki data dir with ``size`` chunks: the real seed chunks, then perturbed copies.

    Copy i of a seed chunk keeps its text (so its BM25 vector is real) and gets the seed vector
    plus Gaussian noise, renormalised (cosine to the seed ~0.9): realistic neighbourhood density
    for HNSW without embedding 100k texts. Each synthetic document is committed (its own generation and
    registry record), or Freki's start-up consistency pass would remove its chunks as orphans. Payloads are
    stored unsealed (readers accept both). Cached under .cache/freki-bench.
    """
    target = synth_dir(size, len(seed))
    marker = target / "complete"
    if marker.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    # No flush per write (the WAL has every write; close() flushes): one flush per registry record made
    # the 10k build take minutes and the 100k build most of an hour on a busy box.
    store = EdgeStore(target / "qdrant", flush_writes=False)
    store.ensure_collection(CollectionSpec("freki_chunks", identity.dimension, identity.name))
    registry = DocumentRegistry(EdgeStore(target / "qdrant", flush_writes=False), "freki_chunks_documents")
    rng = np.random.default_rng(0)
    sparse = SparseEncoder()
    base = np.asarray([p.dense for p in seed], dtype=np.float32)
    batch: list[ChunkPoint] = []
    documents: dict[str, tuple[dict[str, object], int]] = {}  # document id -> (a payload, chunks)
    for i in range(size):
        src = seed[i % len(seed)]
        vec = base[i % len(seed)]
        if i >= len(seed):
            vec = vec + rng.normal(0, 0.022, vec.shape).astype(np.float32)
            vec /= np.linalg.norm(vec)
        doc_id = f"{src.payload.get('document_id')}~{i // len(seed)}"
        generation = uuid.uuid5(uuid.NAMESPACE_URL, f"synth-doc/{doc_id}").hex
        payload = dict(src.payload, document_id=doc_id, generation=generation)
        documents[doc_id] = (payload, documents.get(doc_id, (payload, 0))[1] + 1)
        batch.append(ChunkPoint(str(uuid.uuid5(uuid.NAMESPACE_URL, f"synth/{i}")), vec.tolist(),
                                sparse.encode_passage(str(src.payload.get("content", ""))), payload))
        if len(batch) == 2000:
            store.upsert(batch)
            batch = []
    if batch:
        store.upsert(batch)
    for doc_id, (payload, chunks) in documents.items():
        registry.put(DocumentRecord(
            tenant_id=str(payload["tenant_id"]), document_id=doc_id, owner_id=str(payload.get("owner_id", "")),
            source=str(payload.get("source", "")), content_type=str(payload.get("source_type", "text")),
            content_hash=str(payload.get("doc_hash", "")), chunk_count=chunks,
            indexed_at=str(payload.get("indexed_at", "")), embedding_model=identity.name,
            generation=str(payload["generation"]),
        ))
    registry.store.close()
    print(f"  building HNSW for {size} points (blocks a few minutes at 100k)...", flush=True)
    store.optimize()
    store.close()
    marker.write_text("ok")
    return target
