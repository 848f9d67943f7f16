"""Shared test fixtures.

- Audit logs without a data dir go to a fresh ``XDG_STATE_HOME`` per test run.
- torch's OpenMP threads sleep while they wait, as in the services.
- Every test starts with no FREKI_/GERI_/ODIN_ variables from the caller's environment,
  so tests construct settings explicitly (pydantic-settings' own testing habit).
- The embedding model is loaded once per session and shared; pass it to
  ``FrekiEngine(settings, embedder=...)`` / ``build_server(settings, engine=...)``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

# No test may reach a model hub: models come from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# As the services set for themselves (wolf_service.startup): the suite runs models in this process and in
# service processes side by side, where spinning OpenMP threads would wait out each other's time slices.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Audit logs are on by default; those without a data dir (Geri, Odin's tools) go under XDG_STATE_HOME, which
# for a test run is a fresh directory, not the developer's ~/.local/state.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="wolfpack-test-state-")

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
