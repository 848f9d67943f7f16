"""One qdrant-client per on-disk local-mode directory in a process.

qdrant-client's on-disk local mode locks its directory to one client instance, but a Freki opens two stores
(chunks and document registry) and ``freki migrate`` more. Stores on the same directory share one client and
one mutex (local mode is plain Python state, not built for concurrent calls); the last store to close it
closes the client.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_registry_lock = threading.Lock()
_open: dict[str, list[Any]] = {}  # resolved directory -> [client, mutex, users]


def acquire(path: str, make: Callable[[], Any]) -> tuple[Any, threading.Lock]:
    """The client of ``path`` (made by ``make`` for the first user) and the mutex its users share."""
    key = str(Path(path).resolve())
    with _registry_lock:
        entry = _open.get(key)
        if entry is None:
            entry = _open[key] = [make(), threading.Lock(), 0]
        entry[2] += 1
        return entry[0], entry[1]


def release(path: str) -> None:
    """One user of ``path`` is done; the last one closes the client."""
    key = str(Path(path).resolve())
    with _registry_lock:
        entry = _open.get(key)
        if entry is None:
            return
        entry[2] -= 1
        if entry[2] > 0:
            return
        del _open[key]
    with entry[1]:
        entry[0].close()
