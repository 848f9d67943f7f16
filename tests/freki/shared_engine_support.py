"""One real engine behind several Freki replicas in one test process (``store.shared``).

No Qdrant server runs on this box, so replicas share qdrant-client's local mode: every ``RemoteStore``
opened while ``SharedEngine`` is installed talks to the same client, its calls serialised as a server
would. Everything above the client stays per replica (engine, locks, caches, hidden generations).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

import freki.store.remote as remote_module


class SharedEngine:
    """One qdrant-client local-mode engine for every store opened while it is installed."""

    def __init__(self) -> None:
        self._client = QdrantClient(location=":memory:")
        self._lock = threading.RLock()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> SharedEngine:
        monkeypatch.setattr(remote_module, "QdrantClient", lambda **_: self)
        return self

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        return call

    def close(self) -> None:  # each replica closes its store; the engine outlives them
        pass


def shared_store_settings(tmp: Path, shared: bool = True) -> dict[str, Any]:
    """Settings overrides of a replica: the shared collection and the shared key store."""
    return {"store": {"backend": "remote", "url": ":memory:", "shared": shared},
            "gdpr": {"keys_path": tmp / "keys.sqlite"}}
