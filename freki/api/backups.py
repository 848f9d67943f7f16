"""The CreateBackup RPC (a backup of the serving index into ``backup.dir``, ``freki.backup.snapshot``) and the
retention policies' part of GetIndexStatus (``freki.backup.retention``)."""

from __future__ import annotations

import errno
import re
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp
from wolf.v1 import freki_pb2

from freki.backup.retention import Retention
from freki.backup.snapshot import create_backup
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from wolf_service.errors import FailedPrecondition, InvalidArgument, ResourceExhausted

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")


def backup(engine: FrekiEngine, settings: FrekiSettings,
           request: freki_pb2.CreateBackupRequest) -> freki_pb2.CreateBackupResponse:
    """Write the backup ``request`` asks for; the caller names it, never a path."""
    if settings.backup.dir is None:
        raise FailedPrecondition("backups are off: set backup.dir (a directory outside the data dir) to allow "
                                 "CreateBackup")
    name = request.name or f"freki-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}"
    if not _NAME.fullmatch(name) or name.endswith((".part", ".tar", ".tar.gz")) or ".part-" in name:
        raise InvalidArgument(f"name {name[:200]!r} is not a backup name: 1-128 letters, digits, '.', '_', '-', "
                              "starting with a letter or digit, not ending in .tar, .tar.gz or .part")
    try:
        report = create_backup(engine, settings.backup.dir / (f"{name}.tar.gz" if request.tar else name),
                               tar=request.tar)
    except OSError as exc:  # nothing is left behind (create_backup removes its partial copy)
        error = ResourceExhausted if exc.errno == errno.ENOSPC else FailedPrecondition
        raise error(f"the backup into {settings.backup.dir} failed and was removed: {exc.strerror or exc} "
                    f"({exc.filename or settings.backup.dir})") from exc
    created = Timestamp()
    created.FromDatetime(datetime.fromisoformat(report.manifest.created_at))
    counts = report.manifest.counts
    return freki_pb2.CreateBackupResponse(
        request_id=request.request_id, path=str(report.path), files=len(report.manifest.files),
        bytes=report.manifest.total_bytes, documents=counts.get("documents", 0), chunks=counts.get("chunks", 0),
        write_pause_ms=round(report.write_pause_ms), duration_ms=round(report.seconds * 1000), created_at=created)


def retention_status(retention: Retention | None) -> list[freki_pb2.RetentionPolicyStatus]:
    """Each configured policy with what it has done (kept across restarts)."""
    if retention is None:
        return []
    out = []
    for policy in retention.settings.retention.policies:
        state = retention.state.get(policy.name)
        status = freki_pb2.RetentionPolicyStatus(
            name=policy.name, tenant_id=policy.tenant_id, match=dict(policy.match), max_age_days=policy.max_age_days,
            age_field=policy.age_field, documents_deleted=state.documents_deleted if state else 0,
            last_error=state.last_error if state else "")
        if state and state.last_run:
            status.last_run.FromDatetime(datetime.fromisoformat(state.last_run))
        if retention.next_run is not None:
            status.next_run.FromDatetime(retention.next_run)
        out.append(status)
    return out
