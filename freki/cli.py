"""``freki`` command line.

``freki serve [--config FILE] [--host H] [--port N] [--data-dir DIR]`` runs the server;
``freki migrate [--config FILE] (--to-url URL | --to-data-dir DIR) [--to-collection NAME] [--resume]`` copies
the index of a stopped Freki into another store (embedded engine <-> Qdrant server) without re-embedding;
``freki verify [--config FILE] [--heal]`` checks every stored chunk of a stopped Freki against its checksum
(exit 1 when any is corrupt; ``--heal`` re-indexes their documents from the kept sources).
``freki backup`` / ``freki restore`` (``freki.backup.cli``) back a running Freki up and restore it;
``freki keys rotate`` re-wraps a stopped Freki's key store with a new master key.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from freki.backup import cli as backup_cli
from freki.settings import FrekiSettings
from wolf_service.reload import SettingsSource
from wolf_service.startup import run_server


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="freki", description="Freki retrieval service")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gRPC server until SIGTERM/SIGINT")
    serve.add_argument("--config", help="JSON settings file (FREKI_SETTINGS_FILE also works)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--data-dir")
    serve.add_argument("--log-level", help="overrides log.level (DEBUG, INFO, WARNING, ERROR)")
    migrate = sub.add_parser("migrate", help="copy the index into another store (no re-embedding)")
    migrate.add_argument("--config", help="settings of the source Freki (FREKI_SETTINGS_FILE also works)")
    to = migrate.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-url", help="target Qdrant server URL (or a directory: qdrant-client local mode)")
    to.add_argument("--to-data-dir", help="target data_dir for the embedded engine")
    migrate.add_argument("--to-api-key", help="API key of the target Qdrant server")
    migrate.add_argument("--to-collection", help="target collection name (default: the source's)")
    migrate.add_argument("--resume", action="store_true", help="finish an interrupted copy into a non-empty target")
    migrate.add_argument("--batch", type=int, default=256, help="points per write (default 256)")
    verify = sub.add_parser("verify", help="check every stored chunk against its checksum (Freki stopped)")
    verify.add_argument("--config", help="JSON settings file (FREKI_SETTINGS_FILE also works)")
    verify.add_argument("--heal", action="store_true", help="re-index the documents of corrupt chunks")
    chroma = sub.add_parser("import-chroma", help="import a Chroma collection's texts, metadata and vectors "
                            "without re-embedding (Freki stopped; docs/operations.md)")
    chroma.add_argument("--config", help="JSON settings file (FREKI_SETTINGS_FILE also works)")
    chroma.add_argument("--path", required=True, help="the Chroma persistent directory (holds chroma.sqlite3)")
    chroma.add_argument("--collection", required=True, help="the collection's name")
    chroma.add_argument("--tenant", default="", help="tenant to import into (default: default_tenant)")
    chroma.add_argument("--owner", default="", help="data owner of the imported documents (default: the tenant)")
    chroma.add_argument("--group-by", default="", help="metadata key whose value makes one document of its records "
                        "(e.g. source_file); default: one document per record")
    chroma.add_argument("--model", default="", help="the model that made the vectors, when the collection does "
                        "not name it")
    chroma.add_argument("--max-records", type=int, default=1_000_000, help="refuse a larger collection")
    backup_cli.add_commands(sub)
    return parser


def _import_chroma(args: argparse.Namespace) -> int:
    from freki.api.validation import tenant_of
    from freki.engine import FrekiEngine
    from freki.engine.chroma_import import ChromaImportError, import_collection, read_collection
    from wolf_service.errors import ServiceError

    settings = FrekiSettings.load(args.config)
    try:
        tenant = tenant_of(args.tenant, settings)
    except ServiceError as exc:
        print(f"freki import-chroma: {exc}", file=sys.stderr)
        return 2
    try:  # read and checked whole before any model is loaded
        found = read_collection(Path(args.path), args.collection, max_records=args.max_records)
    except ChromaImportError as exc:
        print(f"freki import-chroma: {exc}", file=sys.stderr)
        return 1
    engine = FrekiEngine(settings)
    try:
        report = import_collection(engine, found, tenant=tenant, group_by=args.group_by, model=args.model,
                                   owner=args.owner)
    except (ChromaImportError, ServiceError) as exc:
        print(f"freki import-chroma: {exc}", file=sys.stderr)
        return 1
    finally:
        engine.close()
    print(f"{report.collection}: {report.records:,} records ({report.dimension}-dimensional, {report.model}) as "
          f"{report.documents:,} documents of tenant {tenant!r}: {report.created:,} created, {report.updated:,} "
          f"updated, {report.unchanged:,} unchanged")
    return 0


def _verify(args: argparse.Namespace) -> int:
    import time

    from freki.engine import FrekiEngine
    from freki.store.errors import StoreError

    settings = FrekiSettings.load(args.config)
    settings = settings.model_copy(update={"integrity": settings.integrity.model_copy(
        update={"heal": args.heal, "scrub_interval_s": 0.0})})
    try:
        engine = FrekiEngine(settings)
    except StoreError as exc:
        from freki.api.server import damaged

        print(f"freki verify: {damaged(exc, settings)}", file=sys.stderr)
        return 3
    try:
        report = engine.scrub()
        while args.heal and any(e.heal in ("pending", "healing") for e in engine.quarantine.entries()):
            time.sleep(0.2)
        for name, count in report.checked.items():
            print(f"{name}: {count:,} chunks checked")
        for entry in report.corrupt:
            print(f"corrupt: chunk {entry.chunk_id} of {entry.collection} (tenant {entry.tenant_id!r}, document "
                  f"{entry.document_id!r}): {entry.reason}")
        left = engine.quarantine.entries()
        for entry in left:
            print(f"not healed: chunk {entry.chunk_id}: {entry.heal}")
        print(f"{len(report.corrupt)} corrupt, {engine.quarantine.healed} healed, {len(left)} left")
        return 1 if left else 0
    finally:
        engine.close()


def _migrate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from freki.engine.migration import migrate
    from freki.settings import StoreSettings
    from freki.store.errors import StoreError
    from wolf_service.settings import SettingsError

    try:
        source = FrekiSettings.load(args.config)
        store: dict[str, Any] = {"collection": args.to_collection or source.store.collection, "shared": False}
        store |= {"backend": "remote", "url": args.to_url, "api_key": args.to_api_key} if args.to_url else {
            "backend": "edge"}
        target = source.model_copy(update={
            "store": StoreSettings.model_validate(source.store.model_dump() | store),
            "data_dir": Path(args.to_data_dir) if args.to_data_dir else source.data_dir,
        })
    except (SettingsError, ValidationError) as exc:
        print(f"freki migrate: {exc}", file=sys.stderr)
        return 2
    if args.batch < 1:
        print("freki migrate: --batch must be positive", file=sys.stderr)
        return 2

    def progress(name: str, copied: int) -> None:
        print(f"\r{name}: {copied:,} points", end="", file=sys.stderr, flush=True)

    try:
        reports = migrate(source, target, resume=args.resume, batch=args.batch, progress=progress)
    except StoreError as exc:
        print(f"\nfreki migrate: {exc}", file=sys.stderr)
        return 1
    print(file=sys.stderr)
    for report in reports:
        rate = report.points / report.seconds if report.seconds else 0.0
        print(f"{report.collection}: {report.points:,} points copied in {report.seconds:.1f} s ({rate:,.0f}/s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``freki`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "migrate":
        return _migrate(args)
    if args.command == "verify":
        return _verify(args)
    if args.command == "import-chroma":
        return _import_chroma(args)
    if args.command == "backup":
        return backup_cli.backup_command(args)
    if args.command == "restore":
        return backup_cli.restore_command(args)
    if args.command == "keys":
        return backup_cli.keys_command(args)
    overrides: dict[str, Any] = {
        k: v for k, v in (("host", args.host), ("port", args.port), ("data_dir", args.data_dir)) if v is not None
    }
    if args.log_level:
        overrides["log"] = {"level": args.log_level}

    def serve(settings: FrekiSettings, source: SettingsSource) -> None:
        from freki.api.server import serve

        serve(settings, reload_from=source)

    code = run_server("freki", FrekiSettings, args.config, overrides, serve)
    if code:
        return code
    # Everything is flushed and closed by now (server, watcher, stores, key store). Interpreter teardown would
    # still join request threads that are winding down and unload torch and ONNX Runtime, which takes seconds
    # after a SIGTERM during indexing; none of it has anything left to save.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
