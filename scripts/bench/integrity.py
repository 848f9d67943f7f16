"""What integrity checks and disk watermarks cost: a dense top-k search through ``SealedStore`` with the
quarantine on (payload checksum + vector sketch checked, vectors read back) and off (payload read with the
search, sealed blob authenticated only), and one disk watermark check.

    PYTHONPATH=.:protos .venv/bin/python -m scripts.bench.integrity [--points 10000] [--queries 500] [--top 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from freki.store import ChunkPoint, CollectionSpec, StoreConfig, make_store
from freki.store.disk import DiskLevels, DiskWatermarks, populate_debt
from freki.store.integrity import Quarantine, make_check
from freki.store.keys import KeyStore
from freki.store.sealed import SealedStore


def _store(root: Path, keys: KeyStore, n: int, dim: int) -> SealedStore:
    store = SealedStore(make_store(StoreConfig(backend="edge", data_dir=root, flush_writes=False)), keys, ("text",))
    store.ensure_collection(CollectionSpec("bench", dense_dim=dim, embedding_model="bench", sparse=False))
    rng = np.random.default_rng(7)
    for start in range(0, n, 1000):
        store.upsert([ChunkPoint(str(uuid.uuid4()), rng.normal(size=dim).tolist(), None, {
            "tenant_id": "t", "document_id": f"d{i // 10}", "generation": f"g{i // 10}", "chunk_index": i % 10,
            "text": f"chunk {i} " + "lorem ipsum dolor sit amet " * 30}) for i in range(start, min(n, start + 1000))])
    store.optimize()
    return store


def _p50_ms(store: SealedStore, queries: np.ndarray, top: int) -> float:
    times = []
    for q in queries:  # CPU time of this thread (the engine searches on it): less skewed by a busy box
        started = time.thread_time()
        store.search_dense(q.tolist(), [], top)
        times.append(time.thread_time() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        keys = KeyStore(root / "keys.sqlite")
        store = _store(root / "qdrant", keys, args.points, args.dim)
        queries = np.random.default_rng(1).normal(size=(args.queries, args.dim))
        _p50_ms(store, queries[:50], args.top)  # warm up
        quarantine = Quarantine()
        offs, ons = [], []
        for _ in range(3):  # interleaved: the box is shared, so load shifts between runs
            store.quarantine = None
            offs.append(_p50_ms(store, queries, args.top))
            store.quarantine = quarantine
            ons.append(_p50_ms(store, queries, args.top))
        assert not quarantine.entries()
        off, on = statistics.median(offs), statistics.median(ons)
        print(f"dense top-{args.top} of {args.points:,} points, p50 CPU time over {args.queries} queries: "
              f"checks off {off:.3f} ms, checks on {on:.3f} ms (+{on - off:.3f} ms)")
        vector = queries[0].tolist()
        started = time.perf_counter()
        for _ in range(1000):
            make_check({"tenant_id": "t", "document_id": "d", "generation": "g", "chunk_index": 1}, vector)
        print(f"checksum + sketch of one point at write: {(time.perf_counter() - started) * 1000:.3f} ms / 1000 points")
        disk = DiskWatermarks(root, DiskLevels())
        started = time.perf_counter()
        for _ in range(1000):
            disk.check_write("bench", deletion=True)
        print(f"disk watermark check (statvfs): {(time.perf_counter() - started) * 1000:.3f} us")
        started = time.perf_counter()
        for _ in range(20):
            populate_debt(root)
        print(f"tmpfs load-debt scan of this data dir: {(time.perf_counter() - started) * 50:.3f} ms")
        store.close()
        keys.close()


if __name__ == "__main__":
    main()
