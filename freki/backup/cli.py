"""``freki backup`` (asks a running Freki for a backup: the CreateBackup RPC), ``freki restore`` and
``freki keys`` (the key store's master key: ``rotate``, ``id``)."""

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
    restore = sub.add_parser("restore", help="restore a backup into an empty data dir (and a Qdrant server's "
                             "collections), re-applying erasures")
    restore.add_argument("backup", type=Path, help="a backup directory or tar file")
    restore.add_argument("--config", help="settings of the Freki to restore (data_dir, gdpr.*)")
    restore.add_argument("--data-dir", help="overrides data_dir: must be empty or absent")
    restore.add_argument("--erasure-log", type=Path, action="append", default=[],
                         help="an erasure log to re-apply (repeatable); default: gdpr.erasure_log if it exists")
    restore.add_argument("--no-erasure-log", action="store_true",
                         help="restore without an erasure log (only when no erasure happened since the backup)")
    restore.add_argument("--master-key-file", type=Path,
                         help="the master key the backup was taken with, if it was rotated since (its manifest "
                              "names the key's id); the restored key store is re-wrapped with gdpr.master_key_file")
    restore.add_argument("--replace-collections", action="store_true",
                         help="store.backend remote: delete the server's collections of the configured "
                              "store.collection that hold points and restore in their place (default: refuse)")
    keys = sub.add_parser("keys", help="the key store's master key (Freki stopped)")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    rotate = keys_sub.add_parser("rotate", help="re-wrap every data key with a new master key")
    rotate.add_argument("--config", help="settings of the Freki whose key store to rotate (gdpr.*, data_dir)")
    rotate.add_argument("--data-dir", help="overrides data_dir")
    rotate.add_argument("--new-master-key-file", type=Path, required=True,
                        help="the new master key (32 bytes or 64 hex digits), kept outside the data dir")
    rotate.add_argument("--generate", action="store_true", help="create --new-master-key-file (mode 0600) first")
    ident = keys_sub.add_parser("id", help="print a master key file's id (what key stores and backups name)")
    ident.add_argument("file", type=Path)


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


def _settings(args: argparse.Namespace, command: str) -> FrekiSettings | None:
    """The settings of ``--config`` with ``--data-dir`` over them; None (said on stderr) when invalid."""
    from pydantic import ValidationError

    from wolf_service.settings import SettingsError

    try:
        settings = FrekiSettings.load(args.config)
    except (SettingsError, ValidationError) as exc:
        print(f"freki {command}: {exc}", file=sys.stderr)
        return None
    return settings.model_copy(update={"data_dir": Path(args.data_dir)}) if args.data_dir else settings


def restore_command(args: argparse.Namespace) -> int:
    """``freki restore``: exit 0 restored, 1 refused (nothing restored), 2 bad settings."""

    from freki.backup.restore import restore
    from freki.store.errors import StoreError
    from freki.store.master_key import read_master_key
    from wolf_service.errors import ServiceError

    settings = _settings(args, "restore")
    if settings is None:
        return 2
    try:
        old_key = read_master_key(args.master_key_file) if args.master_key_file else None
        report = restore(args.backup, settings, erasure_logs=args.erasure_log, no_erasure_log=args.no_erasure_log,
                         backup_master_key=old_key, replace_collections=args.replace_collections)
    except (ServiceError, StoreError, OSError, ValueError) as exc:
        print(f"freki restore: {exc}", file=sys.stderr)
        return 1
    done = report.reapplied
    print(f"restored {report.manifest.counts.get('documents', 0):,} documents, "
          f"{report.manifest.counts.get('chunks', 0):,} chunks (backup of {report.manifest.created_at}) into "
          f"{settings.data_dir} in {report.seconds:.1f} s; erasure log: {done.entries} entries re-applied, "
          f"{done.keys_destroyed} keys destroyed, {done.points_deleted} points deleted")
    for item in report.uploaded:
        print(f"  {item.collection} on {settings.store.url}: {item.points:,} points, verified (sha256 "
              f"{item.digest[:16]})")
    return 0


def keys_command(args: argparse.Namespace) -> int:
    """``freki keys rotate|id``: exit 0 done, 1 refused (nothing changed), 2 bad settings."""

    from freki.backup.key_rotation import rotate_master_key
    from freki.store.errors import StoreError
    from freki.store.master_key import master_key_id, read_master_key
    from wolf_service.errors import ServiceError

    if args.keys_command == "id":
        try:
            print(master_key_id(read_master_key(args.file)))
        except (OSError, ValueError) as exc:
            print(f"freki keys id: {exc}", file=sys.stderr)
            return 1
        return 0
    settings = _settings(args, "keys rotate")
    if settings is None:
        return 2
    try:
        report = rotate_master_key(settings, args.new_master_key_file, generate=args.generate)
    except (ServiceError, StoreError, OSError, ValueError) as exc:
        print(f"freki keys rotate: {exc}", file=sys.stderr)
        return 1
    if report.already_done:
        print(f"{report.keys_path} is already wrapped with master key {report.new_id}; nothing to do")
    else:
        print(f"re-wrapped {report.rewrapped:,} keys in {report.keys_path} with master key {report.new_id} "
              f"(was {report.old_id})")
    print(f"now set gdpr.master_key_file to {args.new_master_key_file}; keep the old key file as long as a backup "
          f"whose manifest names master key {report.old_id} may be restored")
    return 0
