"""Fixtures of the engine tests: the real embedding servers (tests/freki/embed/embedding_servers.py)."""

from tests.freki.embed.embedding_servers import e5_ollama, e5_openai  # noqa: F401 - fixtures
