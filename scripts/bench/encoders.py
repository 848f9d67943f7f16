"""The bare embedding model on every engine Freki may run: torch ``model.encode``, ONNX Runtime (Freki's default,
freki/embed/encoders.py) and the traced runners for indexing batches (fp32 and bf16): cosine to torch, batch
throughput, one-query latency, and the ONNX CPU time per query at several batch sizes. Section 0 of
``scripts.bench.freki``; prints figures, asserts nothing.

    .venv/bin/python -m scripts.bench.encoders [--passages 256] [--queries 100]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

import numpy as np

from freki.embed.embedder import resolve_model_path
from freki.embed.encoders import BatchedEncoder, Encoder, OnnxEncoder, TorchEncoder
from freki.embed.onnx_export import default_cache_dir, export_onnx
from freki.embed.runners import TorchRunner
from scripts.evalsets import scifact


def one_chunk_texts(n: int) -> dict[str, str]:
    """The first n SciFact abstracts, cut to ~80 words so each is one chunk (no semantic splitting)."""
    es = scifact.load()
    return {doc_id: " ".join(text.split()[:80]) for doc_id, text in list(es.corpus.items())[:n]}


@functools.cache
def raw_encoders() -> dict[str, Encoder]:
    """The bare model: sentence-transformers' ``model.encode`` (torch) and the ONNX export Freki runs."""
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path("all-MiniLM-L6-v2")
    model = SentenceTransformer(path, device="cpu")
    onnx = OnnxEncoder(export_onnx(model, path, default_cache_dir()), model.tokenizer, max_length=256)
    # Every batch on each runner Freki may pick for indexing batches (freki/embed/bulk_choice.py).
    fp32 = BatchedEncoder(model.tokenizer, 256, TorchRunner(model))
    bf16 = BatchedEncoder(model.tokenizer, 256, TorchRunner(model, bf16=True))
    return {"torch (model.encode)": TorchEncoder(model), "onnx": onnx, "torch-fp32 (traced, workers)": fp32,
            "bf16 (traced, workers)": bf16}


def bench_encoders(texts: list[str], queries: list[str]) -> None:
    """Torch vs ONNX on the bare model: agreement, batch throughput and one-query latency."""
    encoders = raw_encoders()
    vectors = {name: enc.encode(texts, batch_size=32) for name, enc in encoders.items()}
    ref = vectors["torch (model.encode)"]
    for name, got in list(vectors.items())[1:]:
        cosines = np.sum(ref * got, axis=1)
        print(f"encoders: cosine {name} vs torch over {len(texts)} passages: min {cosines.min():.6f}, "
              f"mean {cosines.mean():.6f}", flush=True)
    for name, enc in encoders.items():
        started = time.perf_counter()
        enc.encode(texts, batch_size=32)
        rate = len(texts) / (time.perf_counter() - started)
        times = []
        for q in queries:
            t0 = time.perf_counter()
            enc.encode([q], batch_size=1)
            times.append((time.perf_counter() - t0) * 1000)
        print(f"  {name:20s}: {rate:6.1f} passages/s (batch 32); one query p50 {statistics.median(times):.1f} ms",
              flush=True)
    # What micro-batching can save: CPU time (all threads) per query text at several batch sizes.
    onnx = encoders["onnx"]
    for size in (1, 8, 64):
        before = os.times()
        for start in range(0, len(queries), size):
            onnx.encode(queries[start:start + size], batch_size=size)
        after = os.times()
        cpu = (after.user - before.user) + (after.system - before.system)
        print(f"  onnx CPU per query, batches of {size:2d}: {cpu * 1000 / len(queries):.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=256, help="SciFact abstracts, cut to one chunk each")
    parser.add_argument("--queries", type=int, default=100, help="SciFact claims timed one by one")
    args = parser.parse_args()
    passages = list(one_chunk_texts(args.passages).values())
    bench_encoders(passages, list(scifact.load().queries.values())[:args.queries])


if __name__ == "__main__":
    main()
