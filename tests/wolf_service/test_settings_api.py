"""The settings API (wolf.v1.SettingsService) on a real Freki and a real Geri started from a settings file:
admin reads redacted settings and applies validated, persisted, audited changes; every invalid or
privilege-escalating change is refused with a clear error and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from wolf.v1 import settings_pb2, settings_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from geri.settings import GeriSettings
from tests.geri.geri_servers_support import embedded_backend, start_geri  # noqa: F401 - fixture
from tests.wolf_service.conftest import ops_of
from wolf_service.audit_log import read_audit_log
from wolf_service.auth import hash_key
from wolf_service.reload import cli_settings
from wolf_service.serving import ServerHandle
from wolf_service.settings_edit import REDACTED, redact

KEYS = {"ops": "ops-admin-key-0123456789", "app": "app-rwd-key-0123456789", "team": "team-admin-key-0123456789"}
API_KEYS = [
    {"name": "ops", "tenant": "acme", "sha256": hash_key(KEYS["ops"]), "scopes": ["admin"]},
    {"name": "app", "tenant": "acme", "sha256": hash_key(KEYS["app"]), "scopes": ["read", "write", "delete"]},
    # An admin inside one access group of its tenant: settings reach every tenant, so not for it.
    {"name": "team", "tenant": "acme", "sha256": hash_key(KEYS["team"]), "scopes": ["admin"],
     "access_groups": ["sales"]},
]


def auth(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {KEYS[key]}"),)


@pytest.fixture(scope="module")
def freki(shared_engine: FrekiEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerHandle, Path]]:
    """Freki run the way ``freki serve --config FILE`` runs it: settings and reload from the file."""
    d = tmp_path_factory.mktemp("settings-api")
    path = d / "freki.json"
    path.write_text(json.dumps({
        "host": "127.0.0.1", "port": 0, "data_dir": str(d), "reload": {"poll_interval_s": 0},
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        "retrieval": {"top_k": 5},
        "security": {"api_keys": API_KEYS, "settings_change_max_bytes": 2048, "settings_change_max_depth": 8},
    }, indent=2))
    settings, source = cli_settings(FrekiSettings, str(path), {})
    handle, _ = build_server(settings, engine=shared_engine, reload_from=source)
    try:
        yield handle, path
    finally:
        handle.stop(0.5)


def update(handle: ServerHandle, changes: Any, key: str = "ops", dry_run: bool = False
           ) -> settings_pb2.UpdateSettingsResponse:
    text = changes if isinstance(changes, str) else json.dumps(changes)
    with grpc.insecure_channel(handle.address) as channel:
        return settings_pb2_grpc.SettingsServiceStub(channel).UpdateSettings(
            settings_pb2.UpdateSettingsRequest(request_id="set-1", changes_json=text, dry_run=dry_run),
            metadata=auth(key), timeout=60)


def read(handle: ServerHandle, key: str = "ops") -> settings_pb2.SettingsView:
    with grpc.insecure_channel(handle.address) as channel:
        return settings_pb2_grpc.SettingsServiceStub(channel).GetSettings(
            settings_pb2.GetSettingsRequest(request_id="get-1"), metadata=auth(key), timeout=60)


def test_admin_reads_the_effective_settings_with_secrets_redacted(freki: tuple[ServerHandle, Path]) -> None:
    handle, path = freki
    view = read(handle)
    settings = json.loads(view.settings_json)
    assert view.service == "freki" and view.settings_file == str(path.resolve())
    assert settings["retrieval"]["top_k"] == 5 and settings["chunking"]["max_tokens"] == 200
    assert [k["sha256"] for k in settings["security"]["api_keys"]] == [REDACTED] * 3
    assert hash_key(KEYS["ops"]) not in view.settings_json
    with pytest.raises(grpc.RpcError) as err:
        read(handle, key="team")
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and "access_groups" in (err.value.details() or "")
    assert {"retrieval.top_k", "watch"} <= set(view.reloadable)
    assert not any(n.startswith("security") for n in view.reloadable)
    assert {"security", "watch.folders"} <= set(view.file_only)


def test_a_valid_change_is_applied_persisted_and_audited(freki: tuple[ServerHandle, Path]) -> None:
    handle, path = freki
    dry = update(handle, {"retrieval": {"top_k": 7}}, dry_run=True)
    assert list(dry.changed) == ["retrieval.top_k"] and not dry.persisted
    assert ops_of(handle).settings.retrieval.top_k == 5 and json.loads(path.read_text())["retrieval"]["top_k"] == 5

    done = update(handle, {"retrieval": {"top_k": 3}, "chunking": {"max_tokens": 180}})
    assert list(done.changed) == ["chunking.max_tokens", "retrieval.top_k"] and done.persisted
    assert ops_of(handle).settings.retrieval.top_k == 3  # live: the next call reads it
    on_disk = json.loads(path.read_text())
    assert on_disk["retrieval"]["top_k"] == 3 and on_disk["security"]["api_keys"] == API_KEYS
    assert FrekiSettings.load(path).chunking.max_tokens == 180  # what a restart reads
    assert not list(path.parent.glob(".freki.json.*"))  # no staged copy left behind
    events = [e for e in read_audit_log(path.parent / "audit.jsonl") if e["action"] == "settings.update"]
    assert events[-1]["actor"] == "ops" and events[-1]["outcome"] == "ok"
    assert events[-1]["target"] == "fields=chunking.max_tokens,retrieval.top_k"


REFUSED = [
    ("app-key", {"retrieval": {"top_k": 4}}, "app", "PERMISSION_DENIED", "lacks scope 'admin'"),
    ("group-admin", {"retrieval": {"top_k": 4}}, "team", "PERMISSION_DENIED", "'team' has access_groups"),
    ("unknown", {"retrieval": {"topk": 4}}, "ops", "INVALID_ARGUMENT", "did you mean 'retrieval.top_k'"),
    ("invalid", {"retrieval": {"top_k": -1}}, "ops", "INVALID_ARGUMENT", "top_k"),
    ("not-json", "{retrieval", "ops", "INVALID_ARGUMENT", "not valid JSON"),
    ("not-object", "[1]", "ops", "INVALID_ARGUMENT", "non-empty JSON object"),
    ("too-deep", '{"retrieval": ' * 9 + "1" + "}" * 9, "ops", "INVALID_ARGUMENT",
     "deeper than 8 levels (security.settings_change_max_depth)"),
    ("too-big", {"retrieval": {"top_k": 4}, "pad": "x" * 2048}, "ops", "INVALID_ARGUMENT",
     "the limit is security.settings_change_max_bytes=2,048"),
    ("raise-limit", {"security": {"settings_change_max_bytes": 4194304}}, "ops", "PERMISSION_DENIED",
     "security.settings_change_max_bytes cannot be changed through the settings API"),
    ("new-key", {"security": {"api_keys": [*API_KEYS, {"name": "mine", "tenant": "acme",
                                                       "sha256": hash_key("x" * 20)}]}},
     "ops", "PERMISSION_DENIED", "security.api_keys cannot be changed through the settings API"),
    ("widen-scopes", {"security": {"api_keys": [{**API_KEYS[1], "scopes": ["admin"]}]}},
     "ops", "PERMISSION_DENIED", "settings file only"),
    ("drop-keys", {"security": None}, "ops", "PERMISSION_DENIED", "security cannot be changed"),
    ("watch-etc", {"watch": {"folders": [{"path": "/etc"}]}}, "ops", "PERMISSION_DENIED", "watch.folders"),
    ("reset-watch", {"watch": None}, "ops", "PERMISSION_DENIED", "watch"),
    ("data-dir", {"data_dir": "/tmp/elsewhere"}, "ops", "FAILED_PRECONDITION", "data_dir cannot change while"),
    ("listen", {"host": "0.0.0.0", "port": 6000}, "ops", "FAILED_PRECONDITION", "host, port cannot change"),
]


@pytest.mark.parametrize(("changes", "key", "code", "says"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_changes_change_nothing(freki: tuple[ServerHandle, Path], changes: Any, key: str, code: str,
                                        says: str) -> None:
    handle, path = freki
    file_before, live_before = path.read_bytes(), ops_of(handle).settings.model_dump()
    with pytest.raises(grpc.RpcError) as err:
        update(handle, changes, key=key)
    assert err.value.code().name == code and says in (err.value.details() or ""), err.value.details()
    assert path.read_bytes() == file_before and ops_of(handle).settings.model_dump() == live_before
    assert not list(path.parent.glob(".freki.json.*"))


def test_the_api_is_off_without_keys_or_without_a_settings_file(start_freki) -> None:  # type: ignore[no-untyped-def]
    open_freki = start_freki()  # no API keys: no admin to check
    with pytest.raises(grpc.RpcError) as err:
        read(open_freki)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and "needs API keys" in (err.value.details() or "")
    no_file = start_freki(security={"api_keys": API_KEYS})
    with pytest.raises(grpc.RpcError) as err:
        update(no_file, {"retrieval": {"top_k": 4}})
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "--config" in (err.value.details() or "")


def test_geri_serves_the_same_api(embedded_backend, tmp_path: Path) -> None:  # noqa: F811 - fixture
    path = tmp_path / "geri.json"
    path.write_text(json.dumps({"host": "127.0.0.1", "port": 0, "backend": "embedded", "shutdown_grace_s": 1.0,
                                "reload": {"poll_interval_s": 0}, "openai_api_key": "sk-very-secret",
                                "security": {"api_keys": API_KEYS}}))
    settings, source = cli_settings(GeriSettings, str(path), {})
    from geri.server import build_server as build_geri

    handle = build_geri(settings, embedded_backend, reload_from=source)
    try:
        assert "sk-very-secret" not in read(handle).settings_json
        assert list(update(handle, {"default_max_tokens": 64}).changed) == ["default_max_tokens"]
        assert settings.default_max_tokens == 64 and json.loads(path.read_text())["default_max_tokens"] == 64
        with pytest.raises(grpc.RpcError) as err:
            update(handle, {"backend": "openai"})
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        handle.stop(1.0)


def test_redaction_hides_credentials_and_keeps_the_rest() -> None:
    shown = redact({"store": {"url": "http://user:pw@qdrant:6333", "api_key": "k"}, "password": None,
                    "chunking": {"max_tokens": 200}, "security": {"api_keys": [{"name": "a", "sha256": "f" * 64}]}})
    assert shown == {"store": {"url": f"http://{REDACTED}@qdrant:6333", "api_key": REDACTED}, "password": None,
                     "chunking": {"max_tokens": 200}, "security": {"api_keys": [{"name": "a", "sha256": REDACTED}]}}


def test_a_change_an_environment_variable_overrides_is_persisted_with_a_warning(
    start_freki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("FREKI_RETRIEVAL__MAX_TOP_K", "40")
    path = tmp_path / "freki.json"
    path.write_text(json.dumps({"host": "127.0.0.1", "port": 0, "data_dir": str(tmp_path),
                                "reload": {"poll_interval_s": 0}, "security": {"api_keys": API_KEYS}}))
    settings, source = cli_settings(FrekiSettings, str(path), {})
    handle = start_freki(settings, reload_from=source)
    done = update(handle, {"retrieval": {"max_top_k": 30}})
    assert done.persisted and list(done.changed) == [] and settings.retrieval.max_top_k == 40
    assert [w.split(" is ")[0] for w in done.warnings] == ["retrieval.max_top_k"]
    assert "environment variable" in done.warnings[0]
    assert json.loads(path.read_text())["retrieval"]["max_top_k"] == 30


def test_a_settings_file_that_cannot_be_read_is_named_and_left_alone(freki: tuple[ServerHandle, Path]) -> None:
    handle, path = freki
    good = path.read_bytes()
    try:
        path.write_bytes(good.replace(b'"retrieval"', b'"retri\xffval"'))  # an editor saved it as Latin-1
        with pytest.raises(grpc.RpcError) as err:
            update(handle, {"retrieval": {"top_k": 6}})
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION, err.value.details()
        assert str(path.resolve()) in (err.value.details() or "") and "UTF-8" in (err.value.details() or "")
        assert b"\xff" in path.read_bytes() and not list(path.parent.glob(".freki.json.*"))
    finally:
        path.write_bytes(good)


@pytest.mark.parametrize(("field", "value"), [("settings_change_max_bytes", 10), ("settings_change_max_depth", 200)])
def test_the_body_limits_refuse_unsafe_values(field: str, value: int) -> None:
    with pytest.raises(ValueError, match=field):
        FrekiSettings(security={field: value})  # type: ignore[arg-type]
    assert getattr(FrekiSettings().security, field) == {"settings_change_max_bytes": 65536,
                                                        "settings_change_max_depth": 16}[field]
