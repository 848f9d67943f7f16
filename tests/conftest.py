"""Shared test fixtures.

- Every test starts with no FREKI_/GERI_/ODIN_ variables from the caller's environment,
  so tests construct settings explicitly (pydantic-settings' own testing habit).
- The embedding model is loaded once per session and shared; pass it to
  ``FrekiEngine(settings, embedder=...)`` / ``build_server(settings, engine=...)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# No test may reach a model hub: models come from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_PREFIXES = ("FREKI_", "GERI_", "ODIN_")


@pytest.fixture(autouse=True)
def _clean_service_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith(_PREFIXES):
            monkeypatch.delenv(key, raising=False)
    yield


@pytest.fixture(scope="session")
def embedder():  # type: ignore[no-untyped-def]
    """The real packaged all-MiniLM-L6-v2 model, loaded once."""
    from freki.embed.embedder import Embedder

    return Embedder("all-MiniLM-L6-v2")
