"""Append-only audit log: who did what to which target, when, and how it ended. Never content.

One JSON object per line::

    {"at": "2026-11-22T03:20:01.123456+00:00", "actor": "ipv4:127.0.0.1:50312", "action": "gdpr.erase_owner",
     "target": "tenant=acme owner=u-42", "outcome": "ok", "documents": 3, "chunks": 41}

Freki records erasures and exports with it; Geri records generation calls. Details are limited to
scalars with short strings, so a caller cannot log a deleted document's text or a prompt by accident:
audit entries must outlive the data they describe, so they may only name it, never hold it.

Lines are written with one ``write`` on a file opened ``O_APPEND`` and then fsynced, so concurrent
writers (threads or processes) never interleave a line and a recorded event survives a crash.

Rotation by size (:class:`AuditRotation`): before a line would take the file past ``max_bytes``, the file
becomes ``<name>.1`` (older ones shift to ``.2`` … ``.<backups>``, the oldest is deleted) and a new file is
started. Writers of every process serialise on an ``flock`` of ``<name>.lock``, so no event is lost or
written to a file being renamed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Long enough for ids, paths and error messages; too short for a paragraph of someone's document.
MAX_DETAIL_CHARS = 512
_RESERVED = ("at", "actor", "action", "target", "outcome")
Scalar = str | int | float | bool | None


def identifier(value: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """An identifier fit for the log: kept whole up to ``limit`` characters, else cut and tagged with the
    SHA-256 of the whole, so an over-long id (say a 4,000-character document id) is still recorded and
    still tells two ids apart, instead of the event being dropped."""
    if len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{value[: limit - 52]}…[sha256:{digest}]"


class AuditRotation(BaseModel):
    """When an audit file is rotated and how many old ones are kept."""

    model_config = ConfigDict(extra="forbid")
    max_bytes: int = Field(default=100 * 2**20, ge=0, description="Rotate before the file passes this (0 = never)")
    backups: int = Field(default=10, ge=1, le=1000, description="Rotated files kept (<name>.1 … .<backups>)")


class AuditLog:
    """Appends audit events to a JSON-lines file (created with mode 0600 if missing).

    Example::

        audit = AuditLog("/var/lib/freki/audit.jsonl")
        audit.record(actor="ops@example", action="gdpr.erase_owner", target="tenant=t owner=o",
                     outcome="ok", documents=3)
    """

    def __init__(self, path: str | os.PathLike[str], rotation: AuditRotation | None = None) -> None:
        self.path = Path(path)
        self.rotation = rotation or AuditRotation()
        self._lock = threading.Lock()

    def record(self, *, actor: str, action: str, target: str, outcome: str, **details: Scalar) -> dict[str, Any]:
        """Append one event and return it as written.

        Args:
            actor: Who asked (a user, a service account, a gRPC peer); "" becomes "unknown".
            action: What was done, dotted, e.g. ``"gdpr.export_owner"``.
            target: What it was done to, by identifier only (tenant, owner, document id).
            outcome: ``"ok"``, ``"not_found"``, ``"error"``… — how it ended.
            **details: Counts, ids, durations, an error code: scalars only, strings ≤ 512 characters.

        Raises:
            ValueError: a detail is not a scalar or is a long string (looks like content), or uses a
                reserved key. Nothing is written then.
            OSError: the log cannot be written; callers should treat the audited action as failed.
        """
        for key, value in details.items():
            if key in _RESERVED:
                raise ValueError(f"audit detail {key!r} clashes with a standard field; rename it")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise ValueError(
                    f"audit detail {key!r} must be a string, number, bool or None (got {type(value).__name__}); "
                    "audit entries name data, they never hold it"
                )
            if isinstance(value, str) and len(value) > MAX_DETAIL_CHARS:
                raise ValueError(
                    f"audit detail {key!r} is {len(value)} characters, over {MAX_DETAIL_CHARS}; "
                    "log an identifier or a count, not content"
                )
        for name, value in (("action", action), ("target", target), ("outcome", outcome)):
            if not value:
                raise ValueError(f"audit {name} must be non-empty")
            if len(value) > MAX_DETAIL_CHARS:
                raise ValueError(f"audit {name} is {len(value)} characters, over {MAX_DETAIL_CHARS}")
        event: dict[str, Any] = {
            "at": datetime.now(UTC).isoformat(),
            "actor": (actor or "unknown")[:MAX_DETAIL_CHARS],
            "action": action,
            "target": target,
            "outcome": outcome,
            **details,
        }
        line = (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = os.open(f"{self.path}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._append(line)
            finally:
                os.close(lock)  # releases the flock
        return event

    def _append(self, line: bytes) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            if self.rotation.max_bytes and size and size + len(line) > self.rotation.max_bytes:
                os.close(fd)
                fd = -1
                self._rotate()
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            written = os.write(fd, line)
            if written != len(line):  # only on a full disk; say so rather than leave half a line unnoticed
                raise OSError(f"audit log {self.path}: short write ({written} of {len(line)} bytes)")
            os.fsync(fd)
        finally:
            if fd >= 0:
                os.close(fd)

    def _rotate(self) -> None:
        """name → name.1 → name.2 … → name.<backups> (the oldest is dropped); called under the flock."""
        keep = self.rotation.backups
        Path(f"{self.path}.{keep}").unlink(missing_ok=True)
        for i in range(keep - 1, 0, -1):
            older = Path(f"{self.path}.{i}")
            if older.exists():
                older.replace(f"{self.path}.{i + 1}")
        self.path.replace(f"{self.path}.1")


def default_state_dir() -> Path:
    """Where a service without a data dir keeps its audit log: ``$XDG_STATE_HOME/wolfpack`` (default
    ``~/.local/state/wolfpack``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "wolfpack"


def read_audit_log(path: str | os.PathLike[str], *, rotated: bool = False) -> Iterator[dict[str, Any]]:
    """Yield the events of an audit log in order (none if the file does not exist yet); with ``rotated``,
    those of its rotated files first, oldest first."""
    if rotated:
        backups = sorted((p for p in Path(path).parent.glob(f"{Path(path).name}.*") if p.suffix[1:].isdigit()),
                         key=lambda p: -int(p.suffix[1:]))
        for backup in backups:
            yield from read_audit_log(backup)
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        return
    with handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}: line {number} is not a JSON object: {exc}") from exc
