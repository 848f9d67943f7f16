"""The search log (seed 004's data flywheel, beside the feedback log): one JSON line per RetrieveContext.

Off unless ``search_log.enabled``. Each tenant has its own file ``<data_dir>/search_log/<sha256(tenant)[:32]>
.jsonl``; a line holds the time, tenant, the ``query_id`` the reply carried (the key RecordFeedback ratings
refer to), the data owner the request named (``RequestMetadata.owner_id``, else ""), the query (cut to
``max_query_chars``), the mode, how long the search took, and its hits (document, chunk, score; at most
``max_hits``; neighbour chunks are not hits).

Bounds: a line older than ``max_age_days`` is dropped, and a file that would pass ``max_bytes`` is rewritten
keeping its newest lines (half the bound), so the log never refuses a search nor fills the disk. Both are
applied when a line is written (the age at most once an hour per tenant). Logging is best effort: a write
that fails is logged and the search is answered all the same.

GDPR: an owner's export holds the lines naming that owner; erasing an owner removes those lines and every
line whose hits name one of the owner's documents, erasing a document removes the lines whose hits name it
(a hit list would otherwise outlive the document). The log is left out of backups, so a restore never brings
back an erased line (docs/decisions/0281-neighbours-types-import.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from freki.graph.files import write_atomically

log = logging.getLogger("freki.search_log")
AGE_CHECK_S = 3600.0


class SearchLogSettings(Protocol):
    """What the log reads of the ``search_log`` settings (``freki.settings.retrieval.SearchLogSettings``)."""

    @property
    def enabled(self) -> bool: ...
    @property
    def max_bytes(self) -> int: ...
    @property
    def max_age_days(self) -> float: ...
    @property
    def max_hits(self) -> int: ...
    @property
    def max_query_chars(self) -> int: ...


def log_path(folder: Path, tenant: str) -> Path:
    """The search-log file of a tenant."""
    return folder / f"{hashlib.sha256(tenant.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}.jsonl"


class SearchLog:
    """Appends search records under a lock; bounded by age and size; forgets erased owners and documents."""

    def __init__(self, folder: Path, settings: Callable[[], SearchLogSettings]) -> None:
        """``settings``: read on every call, so a reload turns the log on or off and moves its bounds."""
        self.folder = folder
        self._settings = settings
        self._lock = threading.Lock()
        self._aged: dict[str, float] = {}

    @property
    def enabled(self) -> bool:
        return self._settings().enabled

    def record(self, tenant: str, query_id: str, query: str, hits: Sequence[tuple[str, str, float]], *,
               mode: str, took_ms: int, owner_id: str = "") -> bool:
        """Append one search (``hits``: document id, chunk id, score); False when off or the write failed."""
        limits = self._settings()
        if not limits.enabled:
            return False
        line = json.dumps({
            "at": datetime.now(UTC).isoformat(), "tenant_id": tenant, "query_id": query_id, "owner_id": owner_id,
            "query": query[: limits.max_query_chars], "mode": mode, "took_ms": took_ms,
            "hits": [{"document_id": d, "chunk_id": c, "score": round(s, 4)} for d, c, s in hits[: limits.max_hits]],
        }, ensure_ascii=False) + "\n"
        data = line.encode("utf-8", "surrogatepass")
        path = log_path(self.folder, tenant)
        try:
            with self._lock:
                self.folder.mkdir(parents=True, exist_ok=True)
                size = path.stat().st_size if path.exists() else 0
                now = time.monotonic()
                if size + len(data) > limits.max_bytes or now - self._aged.get(tenant, -AGE_CHECK_S) >= AGE_CHECK_S:
                    self._aged[tenant] = now
                    oldest = (datetime.now(UTC) - timedelta(days=limits.max_age_days)).isoformat()
                    self._rewrite(path, _Keep(oldest, max(limits.max_bytes // 2 - len(data), 0)).select)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
        except OSError as exc:
            log.warning("search log of tenant %r not written: %s", tenant, exc)
            return False
        return True

    def entries(self, tenant: str, owner_id: str | None = None) -> Iterator[dict[str, Any]]:
        """The tenant's records, oldest first (``owner_id``: only those naming that owner)."""
        path = log_path(self.folder, tenant)
        with self._lock:
            lines = path.read_bytes().splitlines() if path.exists() else []
        for raw in lines:
            entry = _parsed(raw)
            if entry is not None and (owner_id is None or entry.get("owner_id") == owner_id):
                yield entry

    def forget(self, tenant: str, *, document_ids: set[str] | frozenset[str] = frozenset(), owner_id: str = "") -> int:
        """Erasure: rewrite the tenant's log without the lines naming ``owner_id`` or a hit in ``document_ids``;
        returns how many lines went."""
        def erased(entry: dict[str, Any]) -> bool:
            hits = entry.get("hits")
            hits = hits if isinstance(hits, list) else []
            return bool(owner_id and entry.get("owner_id") == owner_id) or any(
                isinstance(h, dict) and h.get("document_id") in document_ids for h in hits)

        path = log_path(self.folder, tenant)
        with self._lock:
            if not path.exists() or not (document_ids or owner_id):
                return 0
            return self._rewrite(path, lambda lines: [
                raw for raw in lines if (entry := _parsed(raw)) is None or not erased(entry)])

    @staticmethod
    def _rewrite(path: Path, select: Callable[[list[bytes]], list[bytes]]) -> int:
        """Replace the file (atomically) by the lines ``select`` keeps; returns how many went."""
        if not path.exists():
            return 0
        lines = path.read_bytes().splitlines(keepends=True)
        kept = select(lines)
        if len(kept) == len(lines):
            return 0
        write_atomically(path, b"".join(kept))
        return len(lines) - len(kept)


class _Keep:
    """The bounded rewrite's choice: lines at or after ``oldest`` (ISO time), the newest within ``budget`` bytes."""

    def __init__(self, oldest: str, budget: int) -> None:
        self.oldest, self.budget = oldest, budget

    def select(self, lines: list[bytes]) -> list[bytes]:
        kept: list[bytes] = []
        used = 0
        for raw in reversed(lines):
            entry = _parsed(raw)
            if entry is None or str(entry.get("at", "")) < self.oldest or used + len(raw) > self.budget:
                break  # lines are in time order: everything before this one is older still
            kept.append(raw)
            used += len(raw)
        return kept[::-1]


def _parsed(raw: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None
