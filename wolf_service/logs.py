"""Structured JSON logging and a per-RPC access log.

``configure_logging`` makes the root logger write one JSON object per line (or plain
text for local debugging). ``AccessLogInterceptor`` writes one INFO line per finished
RPC with request_id, tenant, rpc, status and duration — never prompts, document
content or credentials. Any ``Bearer`` token that ends up in a message anyway is masked
by the formatter, so a careless ``log.info(metadata)`` cannot leak an API key.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import IO, Any, Literal

import grpc
from pydantic import BaseModel, Field, field_validator

from wolf_service.error_mapping import request_id_of
from wolf_service.identity import logged_user
from wolf_service.wrapping import (
    StreamCall,
    UnaryCall,
    WrappingInterceptor,
    envelope_of,
    final_code,
    observe_stream,
    rpc_name,
)

access_log = logging.getLogger("wolf_service.access")

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",]+")
# LogRecord attributes that are not "extra" fields.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
# Installed handlers are tagged so reconfiguring replaces ours and leaves others (pytest's) alone.
_OURS = "_wolf_handler"


class LogSettings(BaseModel):
    """Log level and format. The level can be changed by a settings reload."""

    level: str = Field("INFO", description="DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    format: Literal["json", "text"] = "json"
    # Per-logger levels, e.g. {"wolf_service.access": "WARNING"} to silence the access log.
    levels: dict[str, str] = Field(default_factory=dict)

    @field_validator("level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        upper = value.upper()
        if upper not in LEVELS:
            raise ValueError(f"log.level must be one of {', '.join(LEVELS)} (got {value!r})")
        return upper

    @field_validator("levels")
    @classmethod
    def _known_levels(cls, value: dict[str, str]) -> dict[str, str]:
        bad = {k: v for k, v in value.items() if v.upper() not in LEVELS}
        if bad:
            raise ValueError(f"log.levels has unknown levels {bad}; use one of {', '.join(LEVELS)}")
        return {k: v.upper() for k, v in value.items()}


def redact(text: str) -> str:
    """Mask bearer tokens."""
    return _BEARER.sub(r"\1[REDACTED]", text)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, then any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, int | float | bool | type(None)) else redact(str(value))
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """Human-readable lines with the extra fields appended as key=value."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(
            f"{k}={v}" for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")
        )
        return redact(super().format(record) + (f" {extras}" if extras else ""))


def configure_logging(settings: LogSettings, stream: IO[str] | None = None) -> logging.Handler:
    """Install one handler on the root logger with the configured format and levels.

    Calling it again replaces the handler it installed before (not other handlers).
    """
    root = logging.getLogger()
    for existing in list(root.handlers):
        if getattr(existing, _OURS, False):
            root.removeHandler(existing)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.format == "json" else TextFormatter())
    setattr(handler, _OURS, True)
    root.addHandler(handler)
    apply_levels(settings)
    return handler


def apply_levels(settings: LogSettings) -> None:
    """Set the root and per-logger levels (used at start-up and on reload)."""
    logging.getLogger().setLevel(settings.level)
    for name, level in settings.levels.items():
        logging.getLogger(name).setLevel(level)


def tenant_of_request(request: Any) -> str:
    """The request's tenant field, when the message has one (after auth filled it in)."""
    return str(getattr(envelope_of(request), "tenant_id", "") or "")


class AccessLogInterceptor(WrappingInterceptor):
    """One INFO line per finished RPC (DEBUG for health checks and reflection, which probes call often).

    Args:
        identify: Returns the caller's identity (API-key name) for a call, or None.
        default_tenant: Logged when a request leaves its tenant empty.
        user_id_max_chars: The live ``security.user_id_max_chars``; when given, the line carries ``user``, the
            call's validated ``x-wolf-user`` ("" without one, ``<invalid>`` for a refused one; never the key).
    """

    def __init__(
        self, identify: Callable[[grpc.ServicerContext], str | None] | None = None, default_tenant: str = "",
        user_id_max_chars: Callable[[], int] | None = None,
    ) -> None:
        self._identify = identify
        self._default_tenant = default_tenant
        self._user_max = user_id_max_chars

    def _log(self, method: str, request: Any, context: grpc.ServicerContext, code: grpc.StatusCode,
             started: float, messages: int | None = None) -> None:
        level = logging.DEBUG if method.startswith("/grpc.") else logging.INFO
        if not access_log.isEnabledFor(level):
            return
        fields: dict[str, Any] = {
            "rpc": rpc_name(method),
            "request_id": request_id_of(request, context),
            "tenant": tenant_of_request(request) or self._default_tenant,
            "status": code.name,
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
            "peer": context.peer(),
        }
        if self._identify is not None:
            fields["principal"] = self._identify(context) or "anonymous"
        if self._user_max is not None:
            fields["user"] = logged_user(context, self._user_max())
        if messages is not None:
            fields["messages"] = messages
        access_log.log(level, "%s %s in %.1f ms", fields["rpc"], code.name, fields["duration_ms"], extra=fields)

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        started = time.perf_counter()
        failed = True
        try:
            response = call(request, context)
            failed = False
            return response
        finally:
            self._log(method, request, context, final_code(context, failed), started)

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        started = time.perf_counter()

        def on_end(code: grpc.StatusCode, sent: int, _last: Any) -> None:
            self._log(method, request, context, code, started, sent)

        return observe_stream(call, request, context, on_end)
