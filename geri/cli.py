"""``geri`` console script: ``geri serve [--config FILE] [--port N] [--backend embedded|ollama|openai]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, get_args

from geri.settings import BackendKind, GeriSettings
from wolf_service.reload import SettingsSource
from wolf_service.startup import run_server


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="geri", description="Geri: the Wolfpack RAG generation service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the gRPC server until SIGTERM/SIGINT")
    serve.add_argument("--config", help="JSON settings file (default: $GERI_SETTINGS_FILE)")
    serve.add_argument("--host", help="listen address (GERI_HOST)")
    serve.add_argument("--port", type=int, help="listen port, 0 = any free port (GERI_PORT)")
    serve.add_argument("--backend", choices=get_args(BackendKind), help="LLM backend (GERI_BACKEND)")
    serve.add_argument("--log-level", help="overrides log.level (GERI_LOG__LEVEL)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``geri`` console script; returns the process exit code."""
    args = _parser().parse_args(argv)
    overrides: dict[str, Any] = {
        key: value
        for key, value in (("host", args.host), ("port", args.port), ("backend", args.backend))
        if value is not None
    }
    if args.log_level:
        overrides["log"] = {"level": args.log_level}

    def serve(settings: GeriSettings, source: SettingsSource) -> None:
        # Imported here so `geri --help` stays fast (the server pulls in grpc, torch on demand).
        from geri.server import serve

        serve(settings, reload_from=source)

    return run_server("geri", GeriSettings, args.config, overrides, serve)


if __name__ == "__main__":
    sys.exit(main())
