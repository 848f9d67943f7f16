"""Starting a server cleanly: quiet third-party output, check what can be checked early, and turn a start
that cannot succeed into one clear log line and an exit code instead of a traceback.

Exit codes of ``freki serve`` / ``geri serve``: 0 stopped normally, 2 invalid settings, 3 cannot start
(port in use, data directory held by another process, model missing or unreadable).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import warnings
from collections.abc import Callable
from typing import Any

from wolf_service.logs import configure_logging
from wolf_service.reload import SettingsSource, cli_settings
from wolf_service.settings import FileSettings, SettingsError

EXIT_SETTINGS = 2
EXIT_STARTUP = 3
EXIT_INTERRUPTED = 130  # the shells' code for a process ended by SIGINT

log = logging.getLogger("wolf_service.startup")


class StartupError(Exception):
    """The server cannot start; the message says why and what to change, in one line."""


def quiet_libraries() -> None:
    """No progress bars or library chatter between the JSON log lines: tqdm, Hugging Face and transformers
    are silenced before they are imported, and Python warnings go through logging (one line each)."""
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    for noisy in ("transformers", "sentence_transformers", "huggingface_hub", "torch", "urllib3", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def wait_without_spinning() -> None:
    """OpenMP worker threads (torch's intra-op pool) sleep while they wait for work instead of spinning, unless
    the operator set ``OMP_WAIT_POLICY``. A spinning thread holds a core the thread it waits for needs, so on a
    box shared with other busy processes every parallel region waits out a time slice
    (docs/decisions/0360-openmp-passive-wait.md). Takes effect only before torch is first imported."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def check_port(host: str, port: int, *, setting: str) -> None:
    """Fail early (before loading models) when ``host:port`` cannot be listened on."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise StartupError(f"cannot listen on {host}:{port}: {exc.strerror}; set a valid host") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does: TIME_WAIT is no conflict
        try:
            probe.bind(address)
        except OSError as exc:
            why = "the port is in use by another process" if exc.errno == 98 else (exc.strerror or str(exc))
            raise StartupError(f"cannot listen on {host}:{port}: {why}; stop it or choose another port "
                               f"({setting})") from None


def report(service: str, exc: BaseException) -> int:
    """Log why the server could not start, as one line, and return the exit code."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    log.error("%s cannot start: %s", service, message)
    return EXIT_STARTUP


def run_server(service: str, settings_cls: type[FileSettings], config: str | None, overrides: dict[str, Any],
               serve: Callable[[Any, SettingsSource], None]) -> int:
    """What ``<service> serve`` does: load the settings (exit 2 when invalid), silence library output,
    check the port before anything heavy loads, then serve until a signal (exit 3 when it cannot start).

    ``serve(settings, source)`` imports the server itself, so ``--help`` and a refused start stay fast.
    """
    try:
        settings, source = cli_settings(settings_cls, config, overrides)
    except SettingsError as exc:
        print(f"{service}: {exc}", file=sys.stderr)
        return EXIT_SETTINGS
    quiet_libraries()
    wait_without_spinning()
    configure_logging(settings.log)  # type: ignore[attr-defined]
    try:
        check_port(settings.host, settings.port, setting=f"--port / {service.upper()}_PORT")  # type: ignore[attr-defined]
        serve(settings, source)
    except StartupError as exc:
        return report(service, exc)
    except KeyboardInterrupt:  # a second SIGINT (wolf_service.serving.StopSignals): stop now, in one line
        print(f"{service}: interrupted again, stopped without waiting for in-flight calls", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
