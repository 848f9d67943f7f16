"""One embedding request to a server, over the official ``openai`` or ``ollama`` client, with retries.

``ServerClient.embed`` sends one batch and returns the raw vectors as an array; ``freki.embed.remote`` checks
them. Transient failures (connection refused or reset, a timeout, HTTP 408/429/5xx) are retried with
exponential backoff and jitter, within the caller's deadline when one is set (``caller_deadline``): the
earlier of that deadline and ``timeout_s`` bounds each request, and no retry starts after the deadline.
Every error names the server and what to change; the API key never appears in one. Who retries what, across
the services: docs/decisions/0001-retry-policy.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import httpx
import numpy as np
import ollama
import openai

from wolf_service.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument, ServiceError, Unavailable

_RETRIED_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# A request shorter than this is not worth starting: it would time out before a server could answer.
_MIN_REQUEST_S = 0.05

# The monotonic time by which the current call's embeddings are needed (None: no deadline).
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("freki_embedding_deadline", default=None)


@contextlib.contextmanager
def caller_deadline(remaining_s: float | None) -> Iterator[None]:
    """Bound every server request made in this context (this thread) to ``remaining_s`` from now."""
    token = _deadline.set(None if remaining_s is None else time.monotonic() + remaining_s)
    try:
        yield
    finally:
        _deadline.reset(token)


@dataclass(frozen=True)
class ServerConfig:
    """One ``embedding_servers`` entry as the embedder needs it (``freki.settings.embedding_servers`` documents
    each field; ``freki.engine.config.server_config`` builds it)."""

    name: str
    protocol: Literal["openai", "ollama"]
    url: str
    model: str
    query_model: str | None = None
    query_prefix: str = ""
    document_prefix: str = ""
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    batch_size: int = 16
    retries: int = 2
    retry_backoff_s: float = 0.5
    max_input_tokens: int = 512
    dimension: int | None = None


class _Transient(Exception):
    """A failure worth retrying; ``final`` is what the caller sees when no try is left."""

    def __init__(self, final: ServiceError) -> None:
        super().__init__(str(final))
        self.final = final


class ServerClient:
    """Sends embedding requests for one ``embedding_servers`` entry."""

    def __init__(self, server: ServerConfig) -> None:
        self.name = server.name
        self.server = server
        self.where = f"embedding server {server.name!r} ({server.protocol} at {server.url})"
        key = server.api_key
        if server.protocol == "openai":
            # Retries are ours (bounded by the caller's deadline), so the client's own are off.
            self._openai = openai.OpenAI(base_url=server.url, api_key=key or "EMPTY", max_retries=0,
                                         timeout=server.timeout_s)
        else:
            self._headers = {"Authorization": f"Bearer {key}"} if key else {}
            self._ollama = ollama.Client(host=server.url, timeout=server.timeout_s, headers=self._headers)

    def close(self) -> None:
        """Close the HTTP connections."""
        if self.server.protocol == "openai":
            self._openai.close()
        else:
            self._ollama.close()

    def embed(self, texts: Sequence[str], model: str) -> np.ndarray:
        """The server's vectors for ``texts`` (one request), as float32 rows, unchecked.

        Raises:
            Unavailable: the server is down or kept failing transiently through every retry.
            DeadlineExceeded: the caller's deadline passed first.
            FailedPrecondition: the server does not serve ``model``, refused the API key, or answered nonsense.
            InvalidArgument: the server refused the request (HTTP 400/413/422: these texts, or this model).
        """
        attempt = 0
        while True:
            timeout = self._request_timeout()
            try:
                return self._request(texts, model, timeout)
            except _Transient as exc:
                if attempt >= self.server.retries:
                    raise exc.final from exc
                pause = self.server.retry_backoff_s * 2 ** attempt * (0.5 + random.random() / 2)
                expires = _deadline.get()
                if expires is not None and time.monotonic() + pause + _MIN_REQUEST_S >= expires:
                    raise DeadlineExceeded(f"the deadline passed while retrying {self.where}: {exc}") from exc
                time.sleep(pause)
                attempt += 1

    def _request_timeout(self) -> float:
        expires = _deadline.get()
        if expires is None:
            return self.server.timeout_s
        left = expires - time.monotonic()
        if left < _MIN_REQUEST_S:
            raise DeadlineExceeded(f"the deadline passed before {self.where} was asked for embeddings")
        return min(self.server.timeout_s, left)

    def _request(self, texts: Sequence[str], model: str, timeout: float) -> np.ndarray:
        try:
            rows = self._openai_rows(texts, model, timeout) if self.server.protocol == "openai" \
                else self._ollama_rows(texts, model, timeout)
        except ServiceError:
            raise
        except Exception as exc:  # every client/transport error is classified here, once
            raise self._classify(exc, model, timeout) from exc
        try:
            return np.asarray(rows, dtype=np.float32)
        except (ValueError, TypeError) as exc:  # ragged or non-numeric rows
            raise FailedPrecondition(f"{self.where} answered with vectors that are not numbers of one length: "
                                     f"{str(exc)[:200]}") from exc

    def _openai_rows(self, texts: Sequence[str], model: str, timeout: float) -> list[list[float]]:
        response = self._openai.embeddings.create(model=model, input=list(texts), encoding_format="float",
                                                  timeout=timeout)
        data = sorted(response.data, key=lambda d: d.index)
        if [d.index for d in data] != list(range(len(data))):
            raise FailedPrecondition(f"{self.where} answered with embedding indexes {[d.index for d in data][:20]} "
                                     f"for {len(texts)} texts")
        return [d.embedding for d in data]

    def _ollama_rows(self, texts: Sequence[str], model: str, timeout: float) -> list[list[float]]:
        client = self._ollama
        if timeout < self.server.timeout_s:  # the client's timeout is fixed per client: a short-lived one
            client = ollama.Client(host=self.server.url, timeout=timeout, headers=self._headers)
        try:
            return [list(v) for v in client.embed(model=model, input=list(texts)).embeddings]
        finally:
            if client is not self._ollama:
                client.close()

    def _classify(self, exc: Exception, model: str, timeout: float) -> ServiceError | _Transient:
        """The error ``exc`` means for a caller: retried (``_Transient``) or final, naming the server."""
        status = getattr(exc, "status_code", None)
        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
            return _Transient(Unavailable(f"{self.where} did not answer within {timeout:.3g}s "
                                          f"(embedding_servers.{self.name}.timeout_s)"))
        if isinstance(exc, openai.APIConnectionError | httpx.TransportError | ConnectionError):
            return _Transient(Unavailable(f"cannot reach {self.where}: is it running? ({type(exc).__name__})"))
        if not isinstance(status, int):
            return FailedPrecondition(f"{self.where} failed: {type(exc).__name__}: {_detail(exc)}")
        if status in _RETRIED_STATUS:
            return _Transient(Unavailable(f"{self.where} answered HTTP {status}: {_detail(exc)}"))
        if status == 404:
            return FailedPrecondition(f"{self.where} does not serve the model {model!r} (HTTP 404: {_detail(exc)}); "
                                      f"check embedding_servers.{self.name}.model")
        if status in (401, 403):
            return FailedPrecondition(f"{self.where} refused the API key (HTTP {status}); check "
                                      f"embedding_servers.{self.name}.api_key")
        if status in (400, 413, 422):
            return InvalidArgument(f"{self.where} refused the request (HTTP {status}): {_detail(exc)}")
        return FailedPrecondition(f"{self.where} answered HTTP {status}: {_detail(exc)}")


def _detail(exc: BaseException) -> str:
    """A short, single-line account of a server's error (its body can be anything)."""
    text = getattr(exc, "error", None) or getattr(exc, "message", None) or str(exc)
    return " ".join(str(text).split())[:300]
