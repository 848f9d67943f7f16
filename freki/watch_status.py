"""What the watcher reports about each folder: files indexed, pending, and skipped with reasons."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from google.protobuf.timestamp_pb2 import Timestamp
from wolf.v1 import freki_pb2

from freki.watch_files import WatchedFolder

if TYPE_CHECKING:
    from freki.watch import Watcher


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


def watch_status_fields(watcher: Watcher | None, tenant: str) -> dict[str, Any]:
    """IndexStatus fields (``watch_folders``, ``queue_depth``) for one tenant; {} when not watching.

    Only the tenant's own folders are listed: paths of another tenant's folders are not its business.
    """
    if watcher is None:
        return {}
    folders, depth = watcher.status()
    return {
        "queue_depth": depth,
        "watch_folders": [
            freki_pb2.WatchFolderStatus(
                path=f.path, files_indexed=f.files_indexed, files_pending=f.files_pending,
                skipped=[freki_pb2.SkippedFile(path=s.path, reason=s.reason, at=_timestamp(s.at)) for s in f.skipped],
            )
            for f in folders
            if f.tenant_id == tenant
        ],
    }


def _timestamp(value: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts
