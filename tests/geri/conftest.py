"""Geri test fixtures (defined in ``tests/geri/fixtures.py`` so other packages can import them)."""

from tests.geri.fixtures import (  # noqa: F401
    embedded_backend,
    geri_server,
    geri_stub,
    ollama_protocol_server,
    openai_compatible_server,
)
