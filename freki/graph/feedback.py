"""The feedback log (Mindnet's data flywheel, seed 004 "Feedback & Logging"): one JSON line per rating.

Each tenant has its own append-only file ``<data_dir>/feedback/<sha256(tenant)[:32]>.jsonl`` (the tenant's
name never becomes a path, so it cannot climb out of the folder); a line holds the time, tenant, the
``query_id`` RetrieveContext returned, the document, the rating and the comment. A file that reached
``graph.feedback_log_max_bytes`` refuses more (RESOURCE_EXHAUSTED) rather than fill the disk. Erasing a
document or a data owner (``freki.gdpr``) rewrites the file without the lines about the erased documents.

A request seen again (same ``request_id`` and fields, among the last ``RECENT_REQUESTS``) appends nothing: Odin
retries RecordFeedback on UNAVAILABLE, which a dropped connection can return after the line was written. The
memory is the process's: a retry that meets a restarted Freki is recorded again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path

from freki.graph.files import write_atomically
from wolf_service.errors import ResourceExhausted

RECENT_REQUESTS = 4096  # requests remembered to answer a retry without a second line (32-byte digests)


def log_path(folder: Path, tenant: str) -> Path:
    """The feedback file of a tenant."""
    return folder / f"{hashlib.sha256(tenant.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}.jsonl"


class FeedbackLog:
    """Appends validated feedback records, one line each, under a lock (lines never interleave)."""

    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._recent: OrderedDict[bytes, None] = OrderedDict()  # digests: no comment outlives its erasure here

    def record(self, tenant: str, query_id: str, document_id: str, rating: int, comment: str,
               request_id: str = "") -> Path:
        """Append one record (nothing when ``request_id`` with the same fields was recorded lately: a retry);
        returns the tenant's log file."""
        line = json.dumps({
            "at": datetime.now(UTC).isoformat(), "tenant_id": tenant, "query_id": query_id,
            "document_id": document_id, "rating": rating, "comment": comment,
        }, ensure_ascii=False) + "\n"
        data = line.encode("utf-8", "surrogatepass")
        path = log_path(self.folder, tenant)
        key = hashlib.sha256(json.dumps([tenant, request_id, query_id, document_id, rating, comment],
                                        ensure_ascii=False).encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            if request_id and key in self._recent:
                return path
            self.folder.mkdir(parents=True, exist_ok=True)
            size = path.stat().st_size if path.exists() else 0
            if size + len(data) > self.max_bytes:
                raise ResourceExhausted(
                    f"the feedback log of tenant {tenant!r} reached graph.feedback_log_max_bytes "
                    f"({self.max_bytes:,} bytes); move it away or raise the limit")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            if request_id:
                self._recent[key] = None
                if len(self._recent) > RECENT_REQUESTS:
                    self._recent.popitem(last=False)
        return path

    def forget_documents(self, tenant: str, document_ids: set[str]) -> int:
        """Erasure: rewrite the tenant's log without the lines about ``document_ids`` (their ratings and
        comments), atomically; returns how many lines went."""
        path = log_path(self.folder, tenant)
        with self._lock:
            if not document_ids or not path.exists():
                return 0
            kept: list[bytes] = []
            removed = 0
            with path.open("rb") as log:
                for raw in log:
                    try:
                        about = json.loads(raw).get("document_id")
                    except (ValueError, AttributeError):
                        about = None  # not a record line: kept as it was
                    if about in document_ids:
                        removed += 1
                    else:
                        kept.append(raw)
            if removed:
                write_atomically(path, b"".join(kept))
            return removed
