"""What the watcher reports about each folder: files indexed, pending (queued or in work), and skipped with reasons."""

from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from freki.watch.files import WatchedFolder

log = logging.getLogger("freki.watch")


@dataclass(frozen=True)
class SkippedFile:
    """A file the watcher could not index, and why."""

    path: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class FolderStatus:
    """What GetIndexStatus reports per watched folder."""

    path: str
    tenant_id: str
    files_indexed: int
    files_pending: int
    skipped: list[SkippedFile]


class FolderState:
    """Mutable bookkeeping of one folder; the watcher guards it with its status lock."""

    def __init__(self, spec: WatchedFolder) -> None:
        self.spec = spec
        self.indexed: set[str] = set()
        self.skipped: OrderedDict[str, SkippedFile] = OrderedDict()
        self.queued = 0
        self.scanning = False

    def report(self, waiting: int) -> FolderStatus:
        """The folder's status; ``waiting``: its files debounced or in progress outside this state."""
        return FolderStatus(path=str(self.spec.root), tenant_id=self.spec.tenant_id, files_indexed=len(self.indexed),
                            files_pending=self.queued + int(self.scanning) + waiting,
                            skipped=list(reversed(self.skipped.values())))


class StatusBook:
    """Every folder's bookkeeping and the outcome counts, behind one lock (workers, gRPC and events share it)."""

    def __init__(self, specs: list[WatchedFolder], max_skipped: int) -> None:
        self.folders = [FolderState(spec) for spec in specs]
        self.lock = threading.Lock()
        self.max_skipped = max_skipped
        # Outcomes since start (created, updated, unchanged, moved, deleted, skipped): for logs and tests.
        self.counts: Counter[str] = Counter()

    def state_of(self, spec: WatchedFolder) -> FolderState:
        """The bookkeeping of ``spec``."""
        return next(f for f in self.folders if f.spec is spec)

    def count(self, outcome: str) -> None:
        """One more of ``outcome``."""
        with self.lock:
            self.counts[outcome] += 1

    def queued(self, spec: WatchedFolder, change: int) -> None:
        """A task of ``spec`` queued (+1) or finished or dropped (-1)."""
        with self.lock:
            self.state_of(spec).queued += change

    def mark(self, spec: WatchedFolder, doc_id: str, path: Path, reason: str | None) -> None:
        """``path`` was indexed (reason None) or skipped for ``reason``."""
        with self.lock:
            folder = self.state_of(spec)
            folder.skipped.pop(str(path), None)
            if reason is None:
                folder.indexed.add(doc_id)
                return
            log.warning("skipped %s: %s", path, reason)
            self.counts["skipped"] += 1
            folder.skipped[str(path)] = SkippedFile(str(path), reason, datetime.now(UTC))
            while len(folder.skipped) > self.max_skipped:
                folder.skipped.popitem(last=False)

    def dropped(self, spec: WatchedFolder, doc_id: str, path: Path | None) -> None:
        """The document ``doc_id`` (of ``path``, when known) is no longer indexed nor skipped."""
        with self.lock:
            folder = self.state_of(spec)
            folder.indexed.discard(doc_id)
            if path is not None:
                folder.skipped.pop(str(path), None)

    def forget(self, tenant_id: str, doc_ids: set[str]) -> None:
        """Documents erased on request leave every folder of their tenant."""
        with self.lock:
            for folder in self.folders:
                if folder.spec.tenant_id == tenant_id:
                    folder.indexed -= doc_ids
