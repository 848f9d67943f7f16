"""Fixtures for Odin tests: real in-process Freki/Geri servers (port 0) with controllable servicers."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from odin_client import OdinClient, OdinSettings
from tests.odin_client.grounded_servicer_support import GroundedGeri
from tests.odin_client.servicers_support import ControlledFreki, serve_freki, serve_geri
from wolf_service.serving import ServerHandle

S = TypeVar("S")


@contextlib.contextmanager
def running(servicer: S, serve: Callable[[S], ServerHandle]) -> Iterator[tuple[S, ServerHandle]]:
    """``servicer`` on a real gRPC server (port 0) until the block ends; a servicer blocked on its ``release``
    event is released first."""
    handle = serve(servicer)
    try:
        yield servicer, handle
    finally:
        release = getattr(servicer, "release", None)
        if release is not None:
            release.set()
        handle.stop(0)


@pytest.fixture
def freki() -> Iterator[tuple[ControlledFreki, ServerHandle]]:
    """A running controllable Freki and its server handle."""
    with running(ControlledFreki(), serve_freki) as pair:
        yield pair


@pytest.fixture
def geri() -> Iterator[tuple[GroundedGeri, ServerHandle]]:
    """A running controllable Geri (grounded answers included) and its server handle."""
    with running(GroundedGeri(), serve_geri) as pair:
        yield pair


@pytest.fixture
def make_client() -> Iterator[Callable[..., OdinClient]]:
    """Factory of clients (closed at teardown); keyword args go to OdinSettings, plus clock/rng."""
    clients: list[OdinClient] = []

    def make(*, clock: Any = None, rng: Any = None, **settings: Any) -> OdinClient:
        settings.setdefault("retry_initial_backoff_s", 0.05)
        settings.setdefault("retry_jitter", 0.0)
        client = OdinClient(OdinSettings(**settings), clock=clock, rng=rng)
        clients.append(client)
        return client

    try:
        yield make
    finally:
        for client in clients:
            client.close()


@contextlib.contextmanager
def real_freki_server(tmp_path_factory: pytest.TempPathFactory, embedder: Any,
                      **settings: Any) -> Iterator[ServerHandle]:
    """A real Freki on port 0 with the packaged embedding model and the embedded Qdrant engine; ``settings``
    over the defaults."""
    from freki.api.server import build_server
    from freki.engine import FrekiEngine
    from freki.settings import FrekiSettings

    built = FrekiSettings(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("freki"),
                          shutdown_grace_s=1.0, **settings)
    handle, engine = build_server(built, engine=FrekiEngine(built, embedder=embedder))
    try:
        yield handle
    finally:
        handle.stop(1.0)
        engine.close()


@pytest.fixture(scope="module")
def real_freki(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[ServerHandle]:
    """A real Freki (per module)."""
    with real_freki_server(tmp_path_factory, embedder) as handle:
        yield handle
