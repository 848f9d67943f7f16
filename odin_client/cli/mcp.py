"""``odin mcp``: serve Freki and Geri to agents over the Model Context Protocol (stdio or Streamable HTTP).

stdio (the default) is for a local agent that starts ``odin mcp`` itself: it acts with Odin's configured key
and tenant, and offers writing and deleting only with ``--allow write,delete`` (``stdio_scopes``). The http
transport serves remote agents; each request must carry one of the configured ``api_keys``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from odin_client.cli.exit_codes import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE
from odin_client.settings import OdinSettings
from wolf_service.settings import SettingsError


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """The ``mcp`` subcommand."""
    mcp = sub.add_parser("mcp", parents=[common], help="serve the index to agents over MCP (stdio or http)")
    mcp.add_argument("--transport", choices=["stdio", "http"], help="stdio (default) or http (Streamable HTTP)")
    mcp.add_argument("--host", help="http: listen address (ODIN_MCP_HOST, default 127.0.0.1)")
    mcp.add_argument("--port", type=int, help="http: listen port (ODIN_MCP_PORT, default 8765)")
    mcp.add_argument("--config", metavar="FILE", help="JSON settings of the MCP server (ODIN_MCP_SETTINGS_FILE)")
    mcp.add_argument("--allow", metavar="SCOPES",
                     help="stdio: scopes to offer tools for, comma-separated (default read; write, delete, admin)")


def run(args: argparse.Namespace, odin: OdinSettings) -> int:
    """Serve until the client closes stdin (stdio) or SIGTERM/SIGINT (http); the exit code."""
    try:
        from odin_client.mcp.access import stdio_access
        from odin_client.mcp.server import http_app, http_server, stdio_server
        from odin_client.mcp.settings import McpSettings
    except ImportError as exc:
        print(f"odin mcp: the MCP SDK is not installed ({exc.name}); pip install 'wolfpack-rag[mcp]'",
              file=sys.stderr)
        return EXIT_UNAVAILABLE
    overrides: dict[str, Any] = {k: v for k, v in (("transport", args.transport), ("host", args.host),
                                                   ("port", args.port)) if v is not None}
    if args.allow is not None:
        overrides["stdio_scopes"] = [s.strip() for s in args.allow.split(",") if s.strip()]
    try:
        settings = McpSettings.load(args.config, **overrides)
        if settings.transport == "http":
            server = http_server(settings, odin)
        else:
            key = odin.api_key.get_secret_value() if odin.api_key else None
            server = stdio_server(settings, odin, stdio_access(settings.api_keys, key, odin.tenant_id,
                                                               settings.stdio_scopes))
    except (SettingsError, ValueError) as exc:
        print(f"odin mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if settings.transport == "stdio":
        server.run("stdio")  # stdout carries the protocol: everything else goes to stderr
        return EXIT_OK
    import uvicorn

    uvicorn.run(http_app(server), host=settings.host, port=settings.port, log_config=None, access_log=False,
                limit_concurrency=settings.max_connections)
    return EXIT_OK
