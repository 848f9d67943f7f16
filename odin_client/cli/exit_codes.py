"""The exit codes of every ``odin`` command (``odin mcp`` included), defined here once; README.md lists them."""

from __future__ import annotations

from odin_client.types.errors import InvalidRequest, OdinError, ServiceUnavailable

EXIT_OK = 0
EXIT_ERROR = 1  # anything else that failed
EXIT_USAGE = 2  # a usage error, invalid settings or an invalid argument
EXIT_UNAVAILABLE = 3  # a service (or a package the command needs) is unavailable
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT


def exit_code_for(exc: OdinError) -> int:
    """The exit code of a command that failed with ``exc``."""
    if isinstance(exc, ServiceUnavailable):
        return EXIT_UNAVAILABLE
    if isinstance(exc, InvalidRequest):
        return EXIT_USAGE
    return EXIT_ERROR
