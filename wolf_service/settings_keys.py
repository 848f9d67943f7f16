"""Refusing settings nobody reads: unknown keys in a settings file (at any depth) and unknown
``<PREFIX>…`` environment variables, each with a "did you mean" suggestion.

A misspelled setting that is silently ignored is worse than one that stops the service: the operator
believes ``{"retrieval": {"topk": 8}}`` or ``FREKI_RETRIEVAL__TOPK=8`` is in force while the default is.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

# Variables that share a service's prefix but are read by something else than its settings model.
OTHER_ENV = frozenset({"SETTINGS_FILE", "API_KEY", "EVAL_CACHE"})


def _suggest(word: str, choices: list[str]) -> str | None:
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return found[0] if found else None


def _unwrap(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """("model" | "list" | "dict", Model) when a field holds settings models, else None."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _unwrap(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _unwrap(arg)
            if found is not None:
                return found
        return None
    if origin in (list, tuple, set, frozenset):
        args = get_args(annotation)
        inner = _unwrap(args[0]) if args else None
        return ("list", inner[1]) if inner and inner[0] == "model" else None
    if origin is dict:
        args = get_args(annotation)
        inner = _unwrap(args[1]) if len(args) == 2 else None
        return ("dict", inner[1]) if inner and inner[0] == "model" else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return ("model", annotation)
    return None


def _names(model: type[BaseModel]) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        names[name] = info.annotation
        if isinstance(info.alias, str):
            names[info.alias] = info.annotation
    return names


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any], path: str = "") -> list[str]:
    """Messages for every key of ``data`` (recursively) that ``model`` has no field for."""
    if model.model_config.get("extra") == "allow":
        return []
    names = _names(model)
    problems: list[str] = []
    for key, value in data.items():
        where = f"{path}{key}"
        if key not in names:
            hint = _suggest(str(key), list(names))
            problems.append(f"unknown setting {where!r}" + (f"; did you mean {path + hint!r}?" if hint else
                                                            f" (known here: {', '.join(sorted(names))})"))
            continue
        nested = _unwrap(names[key])
        if nested is None:
            continue
        kind, sub = nested
        if kind == "model" and isinstance(value, Mapping):
            problems += unknown_keys(sub, value, f"{where}.")
        elif kind == "list" and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    problems += unknown_keys(sub, item, f"{where}[{i}].")
        elif kind == "dict" and isinstance(value, Mapping):
            for name, item in value.items():
                if isinstance(item, Mapping):
                    problems += unknown_keys(sub, item, f"{where}.{name}.")
    return problems


def unknown_env(model: type[BaseModel], prefix: str, delimiter: str | None, environ: Mapping[str, str],
                foreign: tuple[str, ...] = ()) -> list[str]:
    """Messages for every ``<prefix>…`` variable that names no setting (env names are case-insensitive);
    ``foreign``: sub-prefixes that belong to another settings model (``ODIN_GATEWAY_`` for ``ODIN_``)."""
    problems: list[str] = []
    for var in sorted(environ):
        if not var.upper().startswith(prefix.upper()) or len(var) == len(prefix):
            continue
        rest = var[len(prefix):]
        if rest.upper() in OTHER_ENV or rest.upper().startswith(foreign):
            continue
        parts = rest.lower().split(delimiter.lower()) if delimiter else [rest.lower()]
        current: type[BaseModel] | None = model
        known: list[str] = []
        for i, part in enumerate(parts):
            if current is None:
                break  # below a plain field (a JSON value in the variable) or a dict: not checked
            names = {n.lower(): a for n, a in _names(current).items()}
            if part not in names:
                hint = _suggest(part, list(names))
                spelled = prefix + (delimiter or "").join([*known, hint]).upper() if hint else ""
                problems.append(f"unknown environment variable {var}" + (f"; did you mean {spelled}?" if hint else
                                                                         f" ({part!r} is not a setting)"))
                break
            known.append(part)
            nested = _unwrap(names[part])
            current = nested[1] if nested and nested[0] == "model" and i + 1 < len(parts) else None
    return problems
