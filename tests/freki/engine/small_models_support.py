"""A second, smaller embedding model built offline from the packaged MiniLM's weights (tests, benchmarks).

MiniLM's transformer (all six layers, or only the first ``layers``), its mean pooling, a seeded random
projection from 384 to ``SMALL_DIM`` dimensions (a ``Dense`` layer; random projections keep cosines roughly)
and normalisation — saved as a sentence-transformers directory and loaded by path. With all six layers it
is a real model of another dimension; cut to two it is a weak one whose unrelated texts sit at cosine ~0.63
(what ``freki.embed.calibration`` corrects for).
"""

from __future__ import annotations

from pathlib import Path

SMALL_DIM = 128


def build_small_model(target: Path, layers: int = 6, dim: int | None = SMALL_DIM) -> Path:
    """MiniLM's first ``layers`` layers + mean pooling + a seeded 384->``dim`` projection (none when ``dim`` is
    None: MiniLM's own 384 dimensions) + normalisation, saved to disk."""
    import torch
    from sentence_transformers import SentenceTransformer, models

    from freki.embed.embedder import resolve_model_path

    base = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")
    transformer = base[0]
    transformer.auto_model.encoder.layer = transformer.auto_model.encoder.layer[:layers]
    transformer.auto_model.config.num_hidden_layers = layers
    torch.manual_seed(17)
    projection = [] if dim is None else [models.Dense(384, dim, bias=False, activation_function=torch.nn.Identity())]
    SentenceTransformer(modules=[transformer, base[1], *projection, models.Normalize()], device="cpu").save(
        str(target))
    return target


def build_second_model(directory: Path) -> str:
    """A second real model of MiniLM's dimension for migration tests: its first 3 layers (~2 s, offline)."""
    return str(build_small_model(directory, layers=3, dim=None))
