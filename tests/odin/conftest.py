"""Fixtures for Odin tests: real in-process Freki/Geri servers (port 0) with controllable servicers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from odin_client import OdinClient, OdinSettings
from tests.odin.servicers import ControlledFreki, ControlledGeri, serve_freki, serve_geri
from wolf_service.serving import ServerHandle


@pytest.fixture
def freki() -> Iterator[tuple[ControlledFreki, ServerHandle]]:
    """A running controllable Freki and its server handle."""
    servicer = ControlledFreki()
    handle = serve_freki(servicer)
    try:
        yield servicer, handle
    finally:
        handle.stop(0)


@pytest.fixture
def geri() -> Iterator[tuple[ControlledGeri, ServerHandle]]:
    """A running controllable Geri and its server handle."""
    servicer = ControlledGeri()
    handle = serve_geri(servicer)
    try:
        yield servicer, handle
    finally:
        servicer.release.set()
        handle.stop(0)


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
