"""What the watcher reports about each folder: files indexed, pending, and skipped with reasons."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from freki.watch.files import WatchedFolder


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
