"""Fixtures for Freki: a real in-process server on port 0 with the real model and engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from wolf_service.serving import ServerHandle


def freki_settings(data_dir: Path, **overrides: object) -> FrekiSettings:
    """Settings for a test server: loopback, free port, small chunks so short texts still split."""
    values: dict[str, object] = {
        "host": "127.0.0.1",
        "port": 0,
        "data_dir": data_dir,
        "shutdown_grace_s": 1.0,
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
    }
    values.update(overrides)
    return FrekiSettings(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def freki_server(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[tuple[ServerHandle, FrekiEngine]]:  # type: ignore[no-untyped-def]
    """A running Freki for the whole test module, torn down in ``finally``."""
    settings = freki_settings(tmp_path_factory.mktemp("freki"))
    engine = FrekiEngine(settings, embedder=embedder)
    handle, engine = build_server(settings, engine=engine)
    try:
        yield handle, engine
    finally:
        handle.stop(1.0)
        engine.close()


@pytest.fixture(scope="module")
def freki_stub(freki_server: tuple[ServerHandle, FrekiEngine]) -> Iterator[freki_pb2_grpc.FrekiServiceStub]:
    """A client stub on a channel to the module's server."""
    handle, _ = freki_server
    with grpc.insecure_channel(handle.address) as channel:
        yield freki_pb2_grpc.FrekiServiceStub(channel)
