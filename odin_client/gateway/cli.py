"""``odin-gateway serve [--host H] [--port N] [--config FILE]``: the OpenAI-compatible HTTP gateway (uvicorn).

Freki and Geri are found through the usual Odin settings (``ODIN_FREKI_TARGET``, ``ODIN_GERI_TARGET``,
TLS, deadlines; ``--odin-settings FILE``). Exit codes as the servers': 2 invalid settings, 3 cannot start.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from odin_client.settings import OdinSettings
from wolf_service.settings import SettingsError
from wolf_service.startup import EXIT_SETTINGS, StartupError, check_port, report


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``odin-gateway`` console script."""
    parser = argparse.ArgumentParser(prog="odin-gateway", description="OpenAI-compatible HTTP gateway")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve HTTP until SIGTERM/SIGINT")
    serve.add_argument("--config", help="JSON settings file of the gateway (ODIN_GATEWAY_SETTINGS_FILE)")
    serve.add_argument("--odin-settings", help="JSON settings file of the Odin client (ODIN_SETTINGS_FILE)")
    serve.add_argument("--host", help="listen address (ODIN_GATEWAY_HOST, default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (ODIN_GATEWAY_PORT, default 8080)")
    args = parser.parse_args(argv)
    from odin_client.gateway.settings import GatewaySettings

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    try:
        settings = GatewaySettings.load(args.config, **overrides)
        odin = OdinSettings.load(args.odin_settings)
    except SettingsError as exc:
        print(f"odin-gateway: {exc}", file=sys.stderr)
        return EXIT_SETTINGS
    try:
        check_port(settings.host, settings.port, setting="--port / ODIN_GATEWAY_PORT")
    except StartupError as exc:
        return report("odin-gateway", exc)
    import uvicorn

    from odin_client.gateway.app import create_app

    uvicorn.run(create_app(settings, odin), host=settings.host, port=settings.port, log_config=None,
                access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
