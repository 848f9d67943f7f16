"""``wolf.v1.SettingsService``: read a running service's effective settings and change them safely.

A change is a JSON merge patch of the settings file. It is merged into the file's JSON, written to a
staged copy beside the file and loaded through the service's own loader (the same unknown-key check
and pydantic validation as at start-up, with the same environment and command-line overrides), then
compared with the live settings. It is refused, and nothing changes, when it

- names something only the file may set (``file_only``: API keys, their scopes and TLS; paths on the
  server's disk, such as watch folders): PERMISSION_DENIED — an admin key must not widen keys or
  reach files through the API;
- names an unknown setting or a value that fails validation: INVALID_ARGUMENT, naming the field;
- changes a setting that needs a restart (listen address, data dir, models…): FAILED_PRECONDITION.

Otherwise the staged copy replaces the file (one rename: a crash leaves the old or the new file) and
the hot-reload path applies it, so the change also survives a restart. The service must run from a
settings file with reload on, and with API keys on: the RPCs need the admin scope, and with no keys
configured there is no admin to check, so both RPCs are refused (fail closed).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import grpc
from pydantic import BaseModel
from wolf.v1 import settings_pb2, settings_pb2_grpc

from wolf_service.audit_interceptor import AuditedRpc
from wolf_service.auth import SecuritySettings
from wolf_service.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from wolf_service.identity import access_of
from wolf_service.reload import SettingsReloader, SettingsSource, changed_fields, flatten
from wolf_service.settings import SettingsError, read_settings_file
from wolf_service.settings_edit import merge_patch, overlaps, patch_paths, redact, replace_atomically, staged_copy

SERVICE_NAME = settings_pb2.DESCRIPTOR.services_by_name["SettingsService"].full_name
# Only the settings file may set these, on every service: who may call, with which scopes, over what.
FILE_ONLY = ("security",)

SCOPES = {"SettingsService/GetSettings": "admin", "SettingsService/UpdateSettings": "admin"}


def _changed_names(request: Any) -> str:
    try:
        patch = json.loads(request.changes_json)
    except (ValueError, TypeError, RecursionError):
        return "fields=(not JSON)"
    return "fields=" + (",".join(sorted(patch_paths(patch))) if isinstance(patch, dict) else "(not an object)")


AUDITED = {
    "SettingsService/GetSettings": AuditedRpc("settings.get", lambda r: "settings"),
    "SettingsService/UpdateSettings": AuditedRpc(
        "settings.update", _changed_names,
        lambda r: {"changed": ",".join(r.changed), "persisted": r.persisted}),
}

Reloading = Callable[[], tuple[SettingsReloader, SettingsSource] | None]


class SettingsApi(settings_pb2_grpc.SettingsServiceServicer):
    """The settings RPCs of one service.

    Args:
        service: ``"freki"`` or ``"geri"``.
        live: The live settings object (what the service reads on every call).
        reloading: The service's reloader and settings source, None while hot reload is off.
        keys_on: Whether API keys are configured (read per call: keys come and go by reload).
        file_only: Further dotted names only the file may set (besides ``security``).
    """

    def __init__(self, service: str, live: BaseModel, reloading: Reloading, keys_on: Callable[[], bool],
                 file_only: Iterable[str] = ()) -> None:
        self._service = service
        self._live = live
        self._reloading = reloading
        self._keys_on = keys_on
        self.file_only = (*FILE_ONLY, *file_only)
        self._lock = threading.Lock()

    def _require_keys(self, context: grpc.ServicerContext) -> None:
        if not self._keys_on():
            raise PermissionDenied("the settings API needs API keys: configure security.api_keys with an "
                                   "admin-scoped key (with no keys there is no admin to check, so it is off)")
        # Settings reach every tenant and every document: a key limited to access groups inside its tenant
        # (docs/decisions/0261) must not read or change them, whatever its scopes.
        caller = access_of(context, getattr(getattr(self._live, "security", None), "api_keys", None) or ())
        if caller.restricted:
            raise PermissionDenied(f"API key {caller.key_name!r} has access_groups; the settings API reaches every "
                                   "tenant and document, so it needs an admin key without them")

    def view(self) -> settings_pb2.SettingsView:
        """The effective settings, secrets redacted."""
        state = self._reloading()
        reloadable = sorted(state[0].reloadable) if state else []
        path = state[1].path if state and state[1].path else None
        return settings_pb2.SettingsView(
            service=self._service, settings_json=json.dumps(redact(self._live.model_dump(mode="json"))),
            reloadable=[n for n in reloadable if not any(n == p or n.startswith(p + ".") for p in self.file_only)],
            file_only=list(self.file_only), settings_file=str(path or ""))

    def GetSettings(self, request: settings_pb2.GetSettingsRequest,  # noqa: N802 - gRPC method name
                    context: grpc.ServicerContext) -> settings_pb2.SettingsView:
        self._require_keys(context)
        return self.view()

    def UpdateSettings(self, request: settings_pb2.UpdateSettingsRequest,  # noqa: N802 - gRPC method name
                       context: grpc.ServicerContext) -> settings_pb2.UpdateSettingsResponse:
        self._require_keys(context)
        security = getattr(self._live, "security", None) or SecuritySettings()
        patch = _parse_change(request.changes_json, security.settings_change_max_bytes,
                              security.settings_change_max_depth)
        touched = sorted(name for name in patch_paths(patch) if overlaps(name, self.file_only))
        if touched:
            raise PermissionDenied(
                f"{', '.join(touched)} cannot be changed through the settings API: API keys, their scopes, TLS "
                "and paths on the server's disk are set in the settings file only; nothing was changed")
        state = self._reloading()
        if state is None or state[1].path is None:
            raise FailedPrecondition("this service runs without a settings file or with hot reload off, so "
                                     "settings cannot change at run time: start it with --config FILE")
        reloader, source = state
        # A symlinked file (e.g. a mounted config) is replaced at its target, so the link stays.
        path = Path(state[1].path).resolve()
        with self._lock:
            changed, warnings, staged = self._stage(patch, path, reloader, source)
            if request.dry_run:
                staged.unlink(missing_ok=True)
                return settings_pb2.UpdateSettingsResponse(
                    request_id=request.request_id, changed=changed, persisted=False, settings=self.view(),
                    warnings=warnings)
            try:
                replace_atomically(staged, path)
            except OSError as exc:
                staged.unlink(missing_ok=True)
                raise FailedPrecondition(f"cannot write the settings file {path}: {exc}; nothing was changed"
                                         ) from exc
            result = reloader.reload("settings API")
        if not result.ok:  # another edit of the file raced this one; the file holds the change, say so
            warnings.append(f"written to {path} but not applied: "
                            + (result.error or f"{', '.join(sorted(result.refused))} need a restart"))
        # The file poller may have applied the new file first; then this reload found nothing left to do.
        return settings_pb2.UpdateSettingsResponse(
            request_id=request.request_id, changed=changed if result.ok else sorted(result.applied), persisted=True,
            settings=self.view(), warnings=warnings)

    def _stage(self, patch: dict[str, Any], path: Path, reloader: SettingsReloader, source: SettingsSource
               ) -> tuple[list[str], list[str], Path]:
        """Validate the change on a staged copy of the file; return what it changes, warnings, the copy."""
        try:
            current = read_settings_file(path)
        except SettingsError as exc:
            raise FailedPrecondition(f"{exc}; fix the file first, nothing was changed") from exc
        try:
            staged = staged_copy(path, merge_patch(current, patch))
        except OSError as exc:
            raise FailedPrecondition(f"cannot write beside the settings file {path}: {exc}; nothing was changed"
                                     ) from exc
        try:
            load = source.load_file or type(self._live).load  # type: ignore[attr-defined]
            try:
                fresh = load(staged)
            except SettingsError as exc:
                raise InvalidArgument(str(exc).replace(str(staged), "the change") + "; nothing was changed"
                                      ) from exc
            changed = changed_fields(self._live, fresh)
            blocked = sorted(name for name in changed if overlaps(name, self.file_only))
            if blocked:
                raise PermissionDenied(f"{', '.join(blocked)} can be changed in the settings file only; "
                                       "nothing was changed")
            restart = sorted(n for n in changed if not any(n == p or n.startswith(p + ".")
                                                           for p in reloader.reloadable))
            if restart:
                raise FailedPrecondition(
                    f"{', '.join(restart)} cannot change while the service runs (needs a restart): edit "
                    f"{path.name} and restart the service; nothing was changed")
        except BaseException:
            staged.unlink(missing_ok=True)
            raise
        fresh_flat, wanted = _leaves(fresh), patch_paths(patch)
        warnings = [f"{name} is overridden by an environment variable or command-line flag; the file holds "
                    "the new value, the service keeps the overriding one"
                    for name in sorted(wanted) if name in fresh_flat and name not in changed
                    and _overridden(name, patch, fresh_flat)]
        return sorted(changed), warnings, staged


def _parse_change(text: str, max_bytes: int, max_depth: int) -> dict[str, Any]:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidArgument(f"changes_json is {size:,} bytes; the limit is "
                              f"security.settings_change_max_bytes={max_bytes:,}")
    try:
        patch = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidArgument(f"changes_json is not valid JSON: {exc}") from None
    if not isinstance(patch, dict) or not patch:
        raise InvalidArgument('changes_json must be a non-empty JSON object, e.g. {"retrieval": {"top_k": 8}}')
    if _depth(patch) > max_depth:
        raise InvalidArgument(f"changes_json nests deeper than {max_depth} levels "
                              f"(security.settings_change_max_depth); no setting is that deep")
    return patch


def _depth(value: Any) -> int:
    """How deeply ``value`` nests (iteratively: a hostile body must not exhaust the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children)
    return deepest


def _leaves(settings: BaseModel) -> dict[str, Any]:
    return flatten(settings.model_dump(mode="json"))


def _overridden(name: str, patch: Mapping[str, Any], fresh: Mapping[str, Any]) -> bool:
    value: Any = patch
    for part in name.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value is not None and fresh.get(name) != value
