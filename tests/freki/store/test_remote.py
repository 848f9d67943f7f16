"""RemoteStore beyond the congruence suite: metadata registry, persistence, an unreachable server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from qdrant_client import QdrantClient, models

from freki.store import (
    EmbeddingModelMismatch,
    RemoteStore,
    StoreConfig,
    StoreError,
    StoreUnavailable,
    make_store,
)
from tests.freki.store.points_support import make_points, spec

pytestmark = pytest.mark.integration


def free_port() -> int:
    """A local TCP port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_reported_as_unavailable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    store = make_store(StoreConfig(backend="remote", url=url, timeout_s=2))
    try:
        with pytest.raises(StoreUnavailable, match=f"Qdrant at {url} did not answer.*check that the server is up"):
            store.ensure_collection(spec())
    finally:
        store.close()


def test_model_is_kept_in_collection_metadata_across_reopen(tmp_path: Path) -> None:
    with RemoteStore(path=str(tmp_path)) as store:
        store.ensure_collection(spec())
        store.upsert(make_points(5))
    client = QdrantClient(path=str(tmp_path))
    meta = client.get_collection("chunks").config.metadata or {}
    client.close()
    assert (meta["embedding_model"], meta["dense_dim"]) == ("test-model-v1", 16)
    with RemoteStore(path=str(tmp_path)) as store:
        with pytest.raises(EmbeddingModelMismatch, match="'test-model-v1'.*'e5-small'"):
            store.ensure_collection(spec(model="e5-small"))
        store.ensure_collection(spec())
        assert store.count([]) == 5


def test_collection_made_without_freki_is_refused(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path))
    client.create_collection("chunks", vectors_config=models.VectorParams(size=16, distance=models.Distance.COSINE))
    client.create_collection(
        "named", vectors_config={"dense": models.VectorParams(size=16, distance=models.Distance.COSINE)}
    )
    client.close()
    with RemoteStore(path=str(tmp_path)) as store:
        with pytest.raises(EmbeddingModelMismatch, match="not a Freki collection"):
            store.ensure_collection(spec())
    with RemoteStore(path=str(tmp_path)) as store:
        with pytest.raises(EmbeddingModelMismatch, match="not recorded"):
            store.ensure_collection(spec(name="named"))


def serve_status(status: int) -> tuple[ThreadingHTTPServer, str]:
    """A real HTTP server that answers every request with ``status`` and a Qdrant-style error body."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = json.dumps({"status": {"error": f"synthetic {status}"}, "time": 0}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def overloaded_server() -> Iterator[str]:
    server, url = serve_status(503)
    try:
        yield url
    finally:
        server.shutdown()


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server, url = serve_status(400)
    try:
        yield url
    finally:
        server.shutdown()


def test_server_errors_map_to_unavailable_and_client_errors_to_store_error(
    overloaded_server: str, refusing_server: str
) -> None:
    with RemoteStore(url=overloaded_server, timeout_s=2) as store:
        with pytest.raises(StoreUnavailable, match="HTTP 503 .*synthetic 503"):
            store.ensure_collection(spec())
    with RemoteStore(url=refusing_server, timeout_s=2) as store:
        with pytest.raises(StoreError, match="HTTP 400 .*synthetic 400") as err:
            store.ensure_collection(spec())
        assert not isinstance(err.value, StoreUnavailable)
