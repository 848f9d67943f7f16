"""Settings loading shared by the services: defaults < JSON file < environment < arguments.

Each service defines one ``BaseSettings`` subclass with its env prefix (``FREKI_``,
``GERI_``, ``ODIN_``) and derives from :class:`FileSettings`, which adds a JSON
settings file named by ``<PREFIX>SETTINGS_FILE`` or passed to :meth:`FileSettings.load`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import ValidationError
from pydantic_settings import (
    BaseSettings,
    JsonConfigSettingsSource,
    PydanticBaseSettingsSource,
)

from wolf_service.settings_keys import unknown_env, unknown_keys


class SettingsError(ValueError):
    """A settings file is missing, not JSON, or fails validation."""


class FileSettings(BaseSettings):
    """Base class: adds an optional JSON settings file below env vars and init arguments."""

    # Sub-prefixes of this model's env prefix that another settings model reads (not checked here).
    foreign_env_prefixes: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        prefix = str(settings_cls.model_config.get("env_prefix", ""))
        path = str(settings_cls.model_config.get("json_file") or os.environ.get(f"{prefix}SETTINGS_FILE", ""))
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path:
            sources.append(JsonConfigSettingsSource(settings_cls, json_file=Path(path)))
        return tuple(sources)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None, **overrides: Any) -> Self:
        """Load settings: defaults, then the JSON file, then environment, then ``overrides``.

        Args:
            path: JSON settings file. When None, ``<PREFIX>SETTINGS_FILE`` is used if set.
            **overrides: Values that win over every other source.

        Raises:
            SettingsError: the file is missing or invalid, a value fails validation, or the file
                (at any depth) or a ``<PREFIX>…`` environment variable names a setting that does not
                exist (with a "did you mean" suggestion).
        """
        prefix = str(cls.model_config.get("env_prefix", ""))
        file = path if path is not None else os.environ.get(f"{prefix}SETTINGS_FILE") or None
        problems = unknown_keys(cls, read_settings_file(file)) if file is not None else []
        where = f" in settings file {file}" if problems else ""
        problems += unknown_env(cls, prefix, cls.model_config.get("env_nested_delimiter"), os.environ,
                                cls.foreign_env_prefixes)
        if problems:
            raise SettingsError(f"invalid {cls.__name__}{where}: " + "; ".join(problems[:10])
                                + (f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""))
        target: type[Self] = cls
        if path is not None:
            # A throwaway subclass carries the path so the env still overrides the file.
            config = {**cls.model_config, "json_file": str(path)}
            target = type(cls.__name__, (cls,), {"model_config": config})
        try:
            return target(**overrides)
        except ValidationError as exc:
            where = f" in {path}" if path else ""
            raise SettingsError(f"invalid {cls.__name__}{where}: {exc}") from exc


def read_settings_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a JSON object from ``path`` with errors that name the file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SettingsError(f"settings file {p} does not exist") from exc
    except json.JSONDecodeError as exc:
        raise SettingsError(f"settings file {p} is not valid JSON: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise SettingsError(f"settings file {p} is not valid UTF-8 (byte {exc.start}); save it as UTF-8") from exc
    except OSError as exc:  # unreadable: permissions, a directory, an I/O error
        raise SettingsError(f"settings file {p} cannot be read: {exc.strerror or exc}") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {p} must hold a JSON object, got {type(data).__name__}")
    return data
