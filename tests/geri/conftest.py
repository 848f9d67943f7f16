"""Geri test fixtures (defined in ``tests/geri/geri_servers_support.py`` so other packages can import them)."""

from tests.geri.geri_servers_support import (  # noqa: F401
    embedded_backend,
    geri_server,
    geri_stub,
    ollama_protocol_server,
    openai_compatible_server,
)
