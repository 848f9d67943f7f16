"""Fixtures for the operations tests: one shared Freki engine, servers built per test with
their own operations settings, TLS material made with the real ``openssl`` CLI."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from wolf_service.auth import hash_key
from wolf_service.reload import SettingsSource
from wolf_service.service_ops import ServiceOps
from wolf_service.serving import ServerHandle

KEYS = {"acme": "acme-secret-key-0123456789", "globex": "globex-secret-key-9876543210"}


def api_keys() -> list[dict[str, str]]:
    """Settings entries for the two test keys (hashed, as they are stored)."""
    return [{"name": f"{tenant}-ci", "tenant": tenant, "sha256": hash_key(key)} for tenant, key in KEYS.items()]


def bearer(tenant: str) -> tuple[tuple[str, str]]:
    """Call metadata carrying the test key of ``tenant``."""
    return (("authorization", f"Bearer {KEYS[tenant]}"),)


def ops_settings(data_dir: Path, **overrides: Any) -> FrekiSettings:
    """Freki settings for a test server: loopback, free port, small chunks."""
    values: dict[str, Any] = {
        "host": "127.0.0.1", "port": 0, "data_dir": data_dir, "shutdown_grace_s": 1.0,
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        "reload": {"poll_interval_s": 0},
    }
    values.update(overrides)
    return FrekiSettings(**values)


def index_request(doc_id: str, content: str, tenant: str = "") -> freki_pb2.IndexDocumentRequest:
    return freki_pb2.IndexDocumentRequest(
        request_id=f"idx-{doc_id}", tenant_id=tenant, document_id=doc_id, source=f"{doc_id}.md", content=content
    )


def retrieve_request(prompt: str, tenant: str = "", top_k: int = 0) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id="ret-1", model_type=common_pb2.RAG, prompt=prompt, tenant_id=tenant,
        retrieval=common_pb2.RetrievalOptions(top_k=top_k),
    )


@pytest.fixture(scope="module")
def shared_engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[FrekiEngine]:  # type: ignore[no-untyped-def]
    """One engine (real model, real embedded Qdrant) for every server of a test module."""
    engine = FrekiEngine(ops_settings(tmp_path_factory.mktemp("engine")), embedder=embedder)
    try:
        yield engine
    finally:
        engine.close()


ServerFactory = Callable[..., ServerHandle]


def ops_of(handle: ServerHandle) -> ServiceOps:
    """The ServiceOps a server was built with (its ``close`` is the handle's first closer)."""
    ops = handle.closers[0].__self__  # type: ignore[attr-defined]
    assert isinstance(ops, ServiceOps)
    return ops


def metrics_url(handle: ServerHandle) -> str:
    server = ops_of(handle).metrics_server
    assert server is not None, "metrics are off for this server"
    return server.url


@pytest.fixture
def start_freki(shared_engine: FrekiEngine, tmp_path: Path) -> Iterator[ServerFactory]:
    """Start Freki servers with given settings overrides; all are stopped in ``finally``."""
    handles: list[ServerHandle] = []

    def start(
        settings: FrekiSettings | None = None, reload_from: SettingsSource | None = None, **overrides: Any
    ) -> ServerHandle:
        settings = settings or ops_settings(tmp_path, **overrides)
        handle, _ = build_server(settings, engine=shared_engine, reload_from=reload_from)
        handles.append(handle)
        return handle

    try:
        yield start
    finally:
        for handle in handles:
            handle.stop(0.5)


def freki_stub(channel: grpc.Channel) -> freki_pb2_grpc.FrekiServiceStub:
    return freki_pb2_grpc.FrekiServiceStub(channel)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for localhost/127.0.0.1 and a client certificate, via openssl."""
    d = tmp_path_factory.mktemp("pki")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=wolfpack-test-ca",
        "-keyout", "ca.key", "-out", "ca.pem")
    (d / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
            "-out", f"{name}.csr")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem")
    # A second, unrelated CA: certificates it signs must be refused.
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=rogue-ca",
        "-keyout", "rogue.key", "-out", "rogue.pem")
    return {p.stem if p.suffix == ".pem" else p.name: p for p in d.iterdir()}
