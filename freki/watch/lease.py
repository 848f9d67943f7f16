"""Which replica watches the folders: the one holding an exclusive lock on ``watch.lease_file``.

Replicas sharing a collection (docs/scaling.md) must not all index the same folder. With a lease file, the
replica that takes the lock (``flock``, released by the kernel when its process ends, even on kill -9)
watches; the others stand by, retry every ``watch.lease_retry_s`` and take over when the holder is gone.
The file records who holds it (host, pid, since) for operators. ``flock`` needs the replicas on one host
or a file system with working locks between hosts (not every NFS set-up has them).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from freki.settings import FrekiSettings

log = logging.getLogger("freki.watch")


def watch_lease(settings: FrekiSettings, on_acquired: Callable[[], None]) -> WatchLease | None:
    """The lease ``watch.lease_file`` asks for, or None (this process watches unconditionally)."""
    if settings.watch.lease_file is not None:
        return WatchLease(settings.watch.lease_file, settings.watch.lease_retry_s, on_acquired)
    if settings.store.shared:
        log.warning("store.shared with watched folders and no watch.lease_file: make sure no other replica "
                    "watches these folders (docs/scaling.md)")
    return None


class WatchLease:
    """Calls ``on_acquired`` once this process holds the lease (at once, or later as a stand-by)."""

    def __init__(self, path: Path, retry_s: float, on_acquired: Callable[[], None]) -> None:
        self.path = Path(path)
        self.retry_s = retry_s
        self._on_acquired = on_acquired
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def start(self) -> None:
        """Take the lease now, or stand by in a daemon thread until it is free."""
        if self._try():
            self._on_acquired()
            return
        log.info("watched folders are held by another replica (%s); standing by", self.holder())
        self._thread = threading.Thread(target=self._standby, name="freki-watch-lease", daemon=True)
        self._thread.start()

    def holder(self) -> str:
        """Who holds the lease, as its file records it."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            return f"host {info.get('host')}, pid {info.get('pid')}, since {info.get('since')}"
        except (OSError, ValueError):
            return "unknown holder"

    def release(self) -> None:
        """Stop standing by, and give the lease up if held."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.retry_s + 5)
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None

    def _standby(self) -> None:
        while not self._stop.wait(self.retry_s):
            if self._try():
                log.warning("took over the watched folders from the previous holder")
                self._on_acquired()
                return

    def _try(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        info = {"host": socket.gethostname(), "pid": os.getpid(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return True
