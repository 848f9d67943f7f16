"""Hot reload of a service's settings file, without a restart.

A reload re-reads the file (plus environment and command-line overrides, exactly as at
start-up) and compares it with the live settings, field by field. If every changed
field is listed as reloadable, the new values are copied into the *live* settings object
— which the services read on every request — and the service's hooks run (e.g. a new
log level, new chunking parameters). Otherwise nothing changes and the log names each
field that needs a restart. A file that fails to parse or validate also changes
nothing; the log says why. Triggers: SIGHUP and/or polling the file's mtime.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from wolf_service.settings import FileSettings

log = logging.getLogger("wolf_service.reload")

ReloadHook = Callable[[set[str], Any], None]


class ReloadSettings(BaseModel):
    """How changes to the settings file are picked up."""

    poll_interval_s: float = Field(
        2.0, ge=0, description="Check the file's mtime this often; 0 = only on SIGHUP."
    )


@dataclass(frozen=True)
class SettingsSource:
    """How a service loaded its settings, so a reload can repeat it exactly.

    Attributes:
        load: Builds settings from the file, environment and command-line overrides.
        path: The settings file (polled for changes); None when there is none.
        load_file: Builds settings the same way from another file (a changed copy the settings API
            validates before it replaces ``path``); None = the settings class's own ``load(file)``.
    """

    load: Callable[[], BaseModel]
    path: Path | None = None
    load_file: Callable[[Path], BaseModel] | None = None


FileSettingsT = TypeVar("FileSettingsT", bound=FileSettings)


def cli_settings(
    settings_cls: type[FileSettingsT], config: str | None, overrides: dict[str, Any]
) -> tuple[FileSettingsT, SettingsSource]:
    """Load a service's settings for ``serve`` and a source that repeats exactly this load.

    A reload then reads the same file and environment and applies the same command-line
    overrides, so flags keep winning over the file.

    Raises:
        SettingsError: the file or a value is invalid.
    """
    prefix = str(settings_cls.model_config.get("env_prefix", ""))
    path = config or os.environ.get(f"{prefix}SETTINGS_FILE")

    def load() -> FileSettingsT:
        return settings_cls.load(config, **overrides)

    def load_file(file: Path) -> FileSettingsT:
        return settings_cls.load(file, **overrides)

    return load(), SettingsSource(load, Path(path) if path else None, load_file)


@dataclass(frozen=True)
class ReloadResult:
    """What a reload did: ``applied`` fields, or why nothing was applied."""

    applied: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()
    error: str = ""

    @property
    def ok(self) -> bool:
        """True when the file was valid and every change was applied."""
        return not self.error and not self.refused


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}``; lists and scalars are leaves.

    An empty dict has no leaves, so ``{}`` → ``{"k": 1}`` reports only ``k``'s path.
    """
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def changed_fields(old: BaseModel, new: BaseModel) -> set[str]:
    """Dotted names of every leaf value that differs between two settings objects."""
    a, b = flatten(old.model_dump(mode="json")), flatten(new.model_dump(mode="json"))
    return {k for k in a.keys() | b.keys() if a.get(k, _MISSING) != b.get(k, _MISSING)}


_MISSING = object()


def _covered(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@dataclass
class SettingsReloader:
    """Reloads ``live`` from ``load()`` when asked, on SIGHUP, or when ``path`` changes.

    Args:
        live: The settings object the service reads; updated in place.
        load: Builds a fresh settings object the way start-up did (file, env, overrides).
        reloadable: Dotted field names (or prefixes, e.g. ``"chunking"``) safe to change live.
        path: The settings file, for mtime polling; None disables polling.
        hooks: Called as ``hook(applied_fields, live)`` after a successful reload.
    """

    live: BaseModel
    load: Callable[[], BaseModel]
    reloadable: frozenset[str]
    path: Path | None = None
    hooks: list[ReloadHook] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def reload(self, reason: str = "request") -> ReloadResult:
        """Re-read the settings and apply them if every change is reloadable."""
        with self._lock:
            try:
                fresh = self.load()
            except Exception as exc:  # SettingsError, OSError, ValidationError: all keep the old settings
                log.error("settings reload (%s) failed; keeping the current settings: %s", reason, exc)
                return ReloadResult(error=str(exc))
            changed = changed_fields(self.live, fresh)
            if not changed:
                log.info("settings reload (%s): no changes", reason)
                return ReloadResult()
            refused = {name for name in changed if not _covered(name, self.reloadable)}
            if refused:
                # Values are not logged: some fields (API keys, store credentials) are secrets.
                log.warning(
                    "settings reload (%s) refused; nothing was changed: %s need%s a restart to take effect",
                    reason, ", ".join(sorted(refused)), "s" if len(refused) == 1 else "",
                    extra={"refused_fields": ",".join(sorted(refused))},
                )
                return ReloadResult(refused=frozenset(refused))
            # Copy whole top-level fields: every leaf below them that differs is reloadable.
            for top in sorted({name.split(".", 1)[0] for name in changed}):
                setattr(self.live, top, getattr(fresh, top))
            log.info("settings reloaded (%s): %s", reason, ", ".join(sorted(changed)),
                     extra={"applied_fields": ",".join(sorted(changed))})
            for hook in self.hooks:
                try:
                    hook(changed, self.live)
                except Exception:
                    log.exception("a settings reload hook failed (fields %s)", sorted(changed))
            return ReloadResult(applied=frozenset(changed))

    # -- triggers -------------------------------------------------------------------------
    def install_sighup(self) -> None:
        """Reload on SIGHUP. Must be called from the main thread."""

        def _on_hup(_signum: int, _frame: Any) -> None:
            # Reload on a thread: a signal handler must not block on locks or I/O.
            threading.Thread(target=self.reload, args=("SIGHUP",), name="reload-sighup", daemon=True).start()

        signal.signal(signal.SIGHUP, _on_hup)

    def start_polling(self, interval_s: float) -> None:
        """Reload whenever the file's modification time or size changes."""
        if self.path is None or interval_s <= 0 or self._thread is not None:
            return
        # Stamp now, not in the thread: a change made before the thread first runs must still count.
        first = _stamp(self.path)
        self._thread = threading.Thread(
            target=self._poll, args=(self.path, interval_s, first), name="reload-poll", daemon=True
        )
        self._thread.start()

    def _poll(self, path: Path, interval_s: float, last: tuple[int, int] | None) -> None:
        while not self._stop.wait(interval_s):
            now = _stamp(path)
            if now != last:
                last = now
                self.reload(f"{path.name} changed")

    def close(self) -> None:
        """Stop polling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
