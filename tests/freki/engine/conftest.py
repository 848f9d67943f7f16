"""Fixtures of the engine tests: the real embedding servers (tests/freki/embed/embedding_servers_support.py)."""

from tests.freki.embed.embedding_servers_support import e5_ollama, e5_openai  # noqa: F401 - fixtures
