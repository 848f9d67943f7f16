"""``freki`` command line: ``freki serve [--config FILE] [--host H] [--port N] [--data-dir DIR]``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``freki`` console script."""
    args = _parser().parse_args(argv)
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
    # still join request threads that are winding down and unload torch and ONNX Runtime, which took ~2.5 s
    # after a SIGTERM during indexing; none of it has anything left to save.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
