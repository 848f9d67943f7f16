"""Retention policies: documents past their age are erased in the background, exactly as DeleteDocument
erases (``freki.gdpr.erase_document``: chunks, record, kept source, links, keys destroyed, engine files
purged, the erasure log written first so a restore erases them again), each erasure in the audit log.

A policy (``retention.policies``) selects documents of one tenant or all, by metadata equality
(``document_type: chat-log``), and keeps them ``max_age_days`` from ``indexed_at`` (when the current version
was indexed) or from a date in their metadata. A document whose date field is missing or unreadable is kept
(and counted in the log line): deleting on a guess is the one thing retention must never do. Every
``interval_s`` each policy runs (the live settings: a reload changes the policies and the interval from the
next pass, without a restart); what it did is kept in ``<data_dir>/retention.json`` (last run, total
erased, last error), so GetIndexStatus shows it after a restart too.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freki.engine import FrekiEngine
from freki.gdpr import erase_document
from freki.ingest.registry import DocumentRecord
from freki.settings import FrekiSettings, RetentionPolicy
from wolf_service.audit_log import AuditLog
from wolf_service.errors import NotFound

if TYPE_CHECKING:
    from freki.watch.watcher import Watcher

log = logging.getLogger("freki.retention")
STATE_FILE = "retention.json"


@dataclass
class PolicyState:
    """What one policy has done; persisted."""

    last_run: str = ""  # ISO 8601, UTC
    documents_deleted: int = 0
    last_error: str = ""


class Retention:
    """Runs the policies every ``retention.interval_s`` on a daemon thread (``start``/``stop``), or on demand
    (``run_once``)."""

    def __init__(self, engine: FrekiEngine, settings: FrekiSettings,
                 watcher: Callable[[], Watcher | None] = lambda: None) -> None:
        self.engine, self.settings, self._watcher = engine, settings, watcher
        self._path = Path(settings.data_dir) / STATE_FILE
        self._audit = AuditLog(settings.audit_log or Path(settings.data_dir) / "audit.jsonl", settings.audit_rotation)
        self._lock = threading.Lock()
        self.state: dict[str, PolicyState] = self._load()
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by stop() and reconfigure()
        self._thread: threading.Thread | None = None
        self.next_run: datetime | None = None

    def start(self) -> None:
        """Start the background thread; it idles while there is no policy or ``interval_s`` is 0."""
        self._thread = threading.Thread(target=self._loop, name="freki-retention", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; a run in progress finishes its current document first."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def reconfigure(self) -> None:
        """The live ``retention`` settings changed (a reload): the next pass uses them, and a shorter
        ``interval_s`` brings it forward."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            interval = self.settings.retention.interval_s
            if not self.settings.retention.policies or interval <= 0:
                self.next_run = None
                self._wake.wait()
                self._wake.clear()
                continue
            due = datetime.now(UTC) + timedelta(seconds=interval)
            self.next_run = due if self.next_run is None else min(self.next_run, due)
            if self._wake.wait(max(0.0, (self.next_run - datetime.now(UTC)).total_seconds())):
                self._wake.clear()  # settings changed or stopping: look again
                continue
            self.next_run = None
            self.run_once()

    def run_once(self, now: datetime | None = None) -> dict[str, int]:
        """Apply every policy once; returns documents erased per policy."""
        now = now or datetime.now(UTC)
        erased: dict[str, int] = {}
        for policy in self.settings.retention.policies:
            if self._stop.is_set():
                break
            state = self.state.setdefault(policy.name, PolicyState())
            count, error = 0, ""
            try:
                for record in list(self._expired(policy, now)):
                    if self._stop.is_set():
                        break
                    count += self._erase(policy, record)
                if count and self.settings.gdpr.purge_on_erase:
                    self.engine.purge()  # one purge for the run; a crash before it purges at the next start
            except Exception as exc:  # a failing store: reported in the status, retried at the next run
                error = f"{type(exc).__name__}: {exc}"[:500]
                log.exception("retention policy %s failed; retried at the next run", policy.name)
            with self._lock:
                state.last_run, state.last_error = now.isoformat(), error
                state.documents_deleted += count
                self._save()
            erased[policy.name] = count
        return erased

    def _expired(self, policy: RetentionPolicy, now: datetime) -> Iterator[DocumentRecord]:
        registry = self.engine.registry
        records = registry.iterate(policy.tenant_id) if policy.tenant_id else registry.everything()
        cutoff = now - timedelta(days=policy.max_age_days)
        undated = 0
        for record in records:
            if not all(_value(record, key) == value for key, value in policy.match.items()):
                continue
            born = _timestamp(record.indexed_at if policy.age_field == "indexed_at"
                              else _value(record, policy.age_field))
            if born is None:
                undated += 1
            elif born < cutoff:
                yield record
        if undated:
            log.info("retention policy %s keeps %d matching documents without a readable %s", policy.name,
                        undated, policy.age_field)

    def _erase(self, policy: RetentionPolicy, record: DocumentRecord) -> int:
        outcome = "ok"
        try:
            erase_document(self.engine, record.tenant_id, record.document_id, watcher=self._watcher(),
                           reason="retention", purge=False)
        except NotFound:  # deleted meanwhile
            outcome = "not_found"
        finally:
            self._audit.record(actor=f"retention:{policy.name}", action="freki.retention_erase",
                               target=f"document={record.document_id}", outcome=outcome, tenant=record.tenant_id,
                               indexed_at=record.indexed_at, max_age_days=policy.max_age_days)
        log.info("retention policy %s erased a document of tenant %s (indexed %s)", policy.name,
                 record.tenant_id, record.indexed_at)
        return 1 if outcome == "ok" else 0

    def _load(self) -> dict[str, PolicyState]:
        try:
            raw = json.loads(self._path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("retention state %s is unreadable (%s); counts start again from 0", self._path, exc)
            return {}
        fields = PolicyState.__dataclass_fields__
        return {str(k): PolicyState(**{f: v for f, v in dict(v).items() if f in fields}) for k, v in raw.items()}

    def _save(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=".retention.")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump({k: asdict(v) for k, v in self.state.items()}, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _value(record: DocumentRecord, key: str) -> Any:
    if key == "document_type" and key not in record.metadata:
        return record.document_type or None
    return record.metadata.get(key)


def _timestamp(value: object) -> datetime | None:
    """A timezone-aware datetime from an ISO 8601 date or datetime (naive ones read as UTC), else None."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
