"""Fixtures for the vector store tests: a real edge engine in a tmp dir and qdrant-client local mode.

The shared edge fixtures skip the per-write segment flush (the WAL still makes every write durable against a
killed process): a flush costs up to ~0.3 s on a busy box and is not what these tests are about. The flush path
is covered by test_edge.py, whose stores use the default.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from freki.store import EdgeStore, RemoteStore
from freki.store.guarded import GuardedStore
from tests.freki.store.points_support import spec


@pytest.fixture
def edge_store(tmp_path: Path) -> Iterator[EdgeStore]:
    store = EdgeStore(tmp_path / "edge", flush_writes=False)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def remote_store() -> Iterator[RemoteStore]:
    store = RemoteStore(location=":memory:")
    try:
        yield store
    finally:
        store.close()


@pytest.fixture(params=["edge", "remote"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GuardedStore]:
    """Each test using this runs once per engine, with the collection already open."""
    made: GuardedStore = (
        EdgeStore(tmp_path / "edge", flush_writes=False)
        if request.param == "edge"
        else RemoteStore(location=":memory:")
    )
    made.ensure_collection(spec())
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[EdgeStore, RemoteStore]]:
    """Both engines with the same empty collection open, for congruence tests."""
    edge, remote = EdgeStore(tmp_path / "edge", flush_writes=False), RemoteStore(location=":memory:")
    try:
        edge.ensure_collection(spec())
        remote.ensure_collection(spec())
        yield edge, remote
    finally:
        edge.close()
        remote.close()
