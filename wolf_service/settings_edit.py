"""The pieces of a settings change that need no server: merge patch, secret redaction, atomic file write.

Used by :mod:`wolf_service.settings_api`; kept apart so each is easy to test and to reason about.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REDACTED = "<redacted>"
# Field names whose values are credentials. "max_tokens" must not match: only whole name parts count.
_SECRET_NAME = re.compile(r"(^|_)(api_key|apikey|password|passphrase|secret|sha256|token|credentials?)$", re.I)
_URL_USERINFO = re.compile(r"^([a-z][a-z0-9+.\-]*://)[^/@\s]+@", re.I)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge key by key, ``null`` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def patch_paths(patch: dict[str, Any], prefix: str = "") -> set[str]:
    """Dotted names a merge patch sets or resets: ``{"a": {"b": 1, "c": None}}`` → ``{"a.b", "a.c"}``."""
    paths: set[str] = set()
    for key, value in patch.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            paths |= patch_paths(value, name)
        else:
            paths.add(name)
    return paths


def overlaps(name: str, prefixes: Iterable[str]) -> bool:
    """True when ``name`` is one of ``prefixes``, lies below one, or holds one (``"watch"`` holds
    ``"watch.folders"``: resetting ``watch`` resets its folders)."""
    return any(name == p or name.startswith(p + ".") or p.startswith(name + ".") for p in prefixes)


def redact(value: Any, key: str = "") -> Any:
    """``value`` with every credential replaced by ``<redacted>``: fields named like one (``api_key``,
    ``sha256``, ``password``…) and the user-info part of URLs (``http://user:pass@host``)."""
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(item, key) for item in value]
    if value is not None and _SECRET_NAME.search(key):
        return REDACTED
    if isinstance(value, str):
        return _URL_USERINFO.sub(rf"\g<1>{REDACTED}@", value)
    return value


def staged_copy(path: Path, data: dict[str, Any]) -> Path:
    """``data`` written as JSON to a new file beside ``path`` (same directory, so a rename is atomic),
    fsynced, with ``path``'s permissions. The caller renames or removes it."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".pending", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(name, stat.S_IMODE(path.stat().st_mode))
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def replace_atomically(staged: Path, path: Path) -> None:
    """Rename ``staged`` over ``path`` and fsync the directory, so after a crash the file is either the
    old or the new one, never a mix."""
    os.replace(staged, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
