"""The gateway's client pool under a crowd of keys, in front of a real Freki that checks API keys.

A legitimate upload must finish while random keys flood the gateway (a pool that cached unchecked keys closed
the upload's client under it: 499 "Channel closed!"), bad keys never take a place in the pool, and
an ``Authorization`` header that is not printable ASCII is 401, not 502.
"""

from __future__ import annotations

import http.client
import json
import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

from freki.api.server import build_server as build_freki
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from odin_client import OdinSettings
from odin_client.gateway import GatewaySettings, create_app
from tests.odin_client.servicers_support import free_port
from wolf_service.auth import hash_key
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration

KEY = "legit-" + "k" * 32
API_KEYS = [{"name": "legit", "tenant": "agency-a", "sha256": hash_key(KEY)}]
# Enough text that indexing it takes seconds: the flood runs while the upload is in flight.
UPLOAD = "\n\n".join(f"Section {i}. The relay {i} forwards telemetry from pump station {i} to the control room "
                     f"every {i % 7 + 2} seconds; its fallback route uses link {i * 3}." for i in range(400))


@pytest.fixture(scope="module")
def freki(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[ServerHandle]:  # type: ignore[no-untyped-def]
    settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("gw-keys"),
                             shutdown_grace_s=1.0, security={"api_keys": API_KEYS})  # type: ignore[arg-type]
    handle, engine = build_freki(settings, engine=FrekiEngine(settings, embedder=embedder))
    yield handle
    handle.stop(1.0)
    engine.close()


def serve(app: FastAPI, port: int) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def call(where: str, method: str, path: str, data: Any = None, authorization: bytes | None = None
         ) -> tuple[int, Any]:
    host, port = where.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=600)
    conn.putrequest(method, path)
    raw = json.dumps(data).encode() if data is not None else b""
    conn.putheader("content-type", "application/json")
    conn.putheader("content-length", str(len(raw)))
    if authorization is not None:
        conn.putheader("authorization", authorization)  # raw bytes, sent as they are
    conn.endheaders(raw)
    reply = conn.getresponse()
    return reply.status, json.loads(reply.read() or b"null")


def flood_during_upload(where: str, document_id: str) -> tuple[tuple[int, Any], list[int]]:
    """Upload ``UPLOAD`` with the legitimate key while random keys list documents, until the upload ends."""
    statuses: list[int] = []
    with ThreadPoolExecutor(9) as pool:
        document = {"text": UPLOAD, "source": f"{document_id}.md", "document_id": document_id}
        upload = pool.submit(call, where, "POST", "/v1/documents", document, f"Bearer {KEY}".encode())
        while not upload.done():
            batch = [pool.submit(call, where, "GET", "/v1/documents", None,
                                 f"Bearer {secrets.token_urlsafe(16)}".encode()) for _ in range(8)]
            statuses.extend(f.result()[0] for f in batch)
        return upload.result(), statuses


@pytest.mark.parametrize("gateway_knows_keys", [False, True], ids=["keys-checked-by-freki", "keys-at-gateway"])
def test_a_random_key_flood_does_not_break_a_legitimate_upload(freki: ServerHandle, gateway_knows_keys: bool,
                                                               tmp_path: Path) -> None:
    odin = OdinSettings(freki_target=freki.address, geri_target=freki.address, index_deadline_s=600)
    settings = GatewaySettings(clients_cached=2, api_keys=API_KEYS if gateway_knows_keys else [])  # type: ignore[arg-type]
    app = create_app(settings, odin)
    for where in serve(app, free_port()):
        (status, reply), flood = flood_during_upload(where, f"upload-{gateway_knows_keys}")
        assert status == 200 and reply["chunk_count"] > 1, reply
        assert len(flood) >= 8 and set(flood) == {401}
        # Refused keys hold no client: only the legitimate key's is left in the pool.
        assert len(app.state.pool) == 1
        status, listed = call(where, "GET", "/v1/documents", None, f"Bearer {KEY}".encode())
        assert status == 200 and f"upload-{gateway_knows_keys}" in [d["document_id"] for d in listed["documents"]]


@pytest.mark.parametrize("header", [
    "Bearer ключ-🔑".encode(),  # UTF-8: not Latin-1 text
    b"Bearer \xff\xfeabc",
    b"Bearer " + b"a" * 600,
    "Bearer caf\u00e9".encode("latin-1"),
])
def test_a_malformed_authorization_header_is_401_before_any_client(freki: ServerHandle, header: bytes) -> None:
    odin = OdinSettings(freki_target=freki.address, geri_target=freki.address)
    app = create_app(GatewaySettings(), odin)
    for where in serve(app, free_port()):
        status, reply = call(where, "POST", "/v1/retrieve", {"query": "relay"}, header)
        assert status == 401 and reply["error"]["type"] == "authentication_error", reply
        assert len(app.state.pool) == 0
