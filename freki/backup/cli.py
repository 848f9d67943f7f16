"""``freki backup`` (asks a running Freki for a backup: the CreateBackup RPC) and ``freki restore``."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

from freki.settings import FrekiSettings


def add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The ``backup`` and ``restore`` subcommands."""
    backup = sub.add_parser("backup", help="ask a running Freki for a consistent backup into its backup.dir")
    backup.add_argument("--address", default="127.0.0.1:50051", help="the Freki to back up (host:port)")
    backup.add_argument("--name", default="", help="the backup's name under backup.dir (default freki-<UTC time>)")
    backup.add_argument("--tar", action="store_true", help="write one tar file instead of a directory")
    backup.add_argument("--api-key", default=os.environ.get("FREKI_API_KEY", ""), help="an admin-scope key")
    backup.add_argument("--timeout", type=float, default=3600.0)
    restore = sub.add_parser("restore", help="restore a backup into an empty data dir, re-applying erasures")
    restore.add_argument("backup", type=Path, help="a backup directory or tar file")
    restore.add_argument("--config", help="settings of the Freki to restore (data_dir, gdpr.*)")
    restore.add_argument("--data-dir", help="overrides data_dir: must be empty or absent")
    restore.add_argument("--erasure-log", type=Path, action="append", default=[],
                         help="an erasure log to re-apply (repeatable); default: gdpr.erasure_log if it exists")
    restore.add_argument("--no-erasure-log", action="store_true",
                         help="restore without an erasure log (only when no erasure happened since the backup)")


def backup_command(args: argparse.Namespace) -> int:
    """``freki backup``: exit 0 with the backup's path, 1 when the server refused, 3 when unreachable."""
    import grpc
    from wolf.v1 import freki_pb2, freki_pb2_grpc

    metadata = [("authorization", f"Bearer {args.api_key}")] if args.api_key else []
    try:
        with grpc.insecure_channel(args.address) as channel:
            reply = freki_pb2_grpc.FrekiServiceStub(channel).CreateBackup(
                freki_pb2.CreateBackupRequest(request_id=f"backup-{uuid.uuid4().hex[:12]}", name=args.name,
                                              tar=args.tar), timeout=args.timeout, metadata=metadata)
    except grpc.RpcError as exc:
        code = exc.code()  # type: ignore[attr-defined]
        print(f"freki backup: {code.name}: {exc.details()}", file=sys.stderr)  # type: ignore[attr-defined]
        return 3 if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) else 1
    print(f"{reply.path}: {reply.documents:,} documents, {reply.chunks:,} chunks, {reply.files} files, "
          f"{reply.bytes / 1e6:.1f} MB in {reply.duration_ms / 1000:.1f} s (writes paused {reply.write_pause_ms} ms)")
    return 0


def restore_command(args: argparse.Namespace) -> int:
    """``freki restore``: exit 0 restored, 1 refused (nothing restored), 2 bad settings."""
    from pydantic import ValidationError

    from freki.backup.restore import restore
    from freki.store.errors import StoreError
    from wolf_service.errors import ServiceError
    from wolf_service.settings import SettingsError

    try:
        settings = FrekiSettings.load(args.config)
        if args.data_dir:
            settings = settings.model_copy(update={"data_dir": Path(args.data_dir)})
    except (SettingsError, ValidationError) as exc:
        print(f"freki restore: {exc}", file=sys.stderr)
        return 2
    try:
        report = restore(args.backup, settings, erasure_logs=args.erasure_log, no_erasure_log=args.no_erasure_log)
    except (ServiceError, StoreError, OSError, ValueError) as exc:
        print(f"freki restore: {exc}", file=sys.stderr)
        return 1
    done = report.reapplied
    print(f"restored {report.manifest.counts.get('documents', 0):,} documents, "
          f"{report.manifest.counts.get('chunks', 0):,} chunks (backup of {report.manifest.created_at}) into "
          f"{settings.data_dir} in {report.seconds:.1f} s; erasure log: {done.entries} entries re-applied, "
          f"{done.keys_destroyed} keys destroyed, {done.points_deleted} points deleted")
    return 0
