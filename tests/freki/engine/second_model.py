"""A second real embedding model for migration tests: the first 3 layers of the packaged MiniLM, saved to a
directory (offline, ~2 s) and loaded by path like any sentence-transformers model."""

from __future__ import annotations

from pathlib import Path


def build_second_model(directory: Path) -> str:
    from sentence_transformers import SentenceTransformer

    from freki.embed.embedder import resolve_model_path

    model = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")
    encoder = model[0].auto_model
    encoder.encoder.layer = encoder.encoder.layer[:3]
    encoder.config.num_hidden_layers = 3
    model.save(str(directory))
    return str(directory)
