"""``odin settings`` against a real Freki run from a settings file with API keys: show the effective
settings, apply a validated change (persisted and live), refuse an invalid one and a non-admin key with
the CLI's exit codes, change nothing on a dry run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from odin_client.cli import main as odin
from odin_client.cli.exit_codes import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from odin_client.cli.settings import changes_of
from tests.wolf_service.conftest import ops_of, shared_engine  # noqa: F401 - fixture
from wolf_service.auth import hash_key
from wolf_service.reload import cli_settings
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration
KEYS = {"ops": "odin-settings-admin-0123456789", "app": "odin-settings-reader-0123456789"}


@pytest.fixture(scope="module")
def freki(shared_engine: FrekiEngine,  # noqa: F811 - the imported fixture
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerHandle, Path]]:
    d = tmp_path_factory.mktemp("odin-settings")
    path = d / "freki.json"
    path.write_text(json.dumps({
        "host": "127.0.0.1", "port": 0, "data_dir": str(d), "reload": {"poll_interval_s": 0},
        "retrieval": {"top_k": 5}, "security": {"api_keys": [
            {"name": "ops", "tenant": "acme", "sha256": hash_key(KEYS["ops"]), "scopes": ["admin"]},
            {"name": "app", "tenant": "acme", "sha256": hash_key(KEYS["app"]), "scopes": ["read"]}]},
    }))
    settings, source = cli_settings(FrekiSettings, str(path), {})
    handle, _ = build_server(settings, engine=shared_engine, reload_from=source)
    try:
        yield handle, path
    finally:
        handle.stop(0.5)


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, handle: ServerHandle, key: str,
        *argv: str) -> tuple[int, str, str]:
    odin_file = tmp_path / f"odin-{key}.json"
    odin_file.write_text(json.dumps({"freki_target": handle.address, "api_key": KEYS[key]}))
    code = odin(["settings", "--settings", str(odin_file), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_show_change_and_refuse(freki: tuple[ServerHandle, Path], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    handle, path = freki
    code, out, _ = run(capsys, tmp_path, handle, "ops", "--json")
    shown = json.loads(out)
    assert code == EXIT_OK and shown["settings"]["retrieval"]["top_k"] == 5 and shown["settings_file"] == str(path)
    assert "retrieval.top_k" in shown["reloadable"] and KEYS["ops"] not in out

    code, out, _ = run(capsys, tmp_path, handle, "ops", "--set", "retrieval.top_k=3", "--dry-run")
    assert code == EXIT_OK and "would change retrieval.top_k" in out
    assert json.loads(path.read_text())["retrieval"]["top_k"] == 5

    code, out, _ = run(capsys, tmp_path, handle, "ops", "--set", "retrieval.top_k=3")
    assert code == EXIT_OK and "changed retrieval.top_k" in out, out
    assert json.loads(path.read_text())["retrieval"]["top_k"] == 3 and ops_of(handle).settings.retrieval.top_k == 3

    before = path.read_bytes()
    code, _, err = run(capsys, tmp_path, handle, "ops", "--set", "retrieval.top_k=-1")
    assert code == EXIT_USAGE and "top_k" in err
    code, _, err = run(capsys, tmp_path, handle, "app", "--set", "retrieval.top_k=4")
    assert code == EXIT_ERROR and "admin" in err, err
    code, _, err = run(capsys, tmp_path, handle, "ops", "--set", "retrieval")
    assert code == EXIT_USAGE and "NAME=VALUE" in err
    code, _, err = run(capsys, tmp_path, handle, "ops", "--dry-run")  # nothing to validate: say so
    assert code == EXIT_USAGE and "--dry-run needs --set" in err
    assert path.read_bytes() == before


def test_pairs_become_one_merge_patch() -> None:
    assert changes_of(["retrieval.top_k=8", "retrieval.mode=hybrid", "search_log.enabled=true", "log.level=DEBUG"]) \
        == {"retrieval": {"top_k": 8, "mode": "hybrid"}, "search_log": {"enabled": True}, "log": {"level": "DEBUG"}}
    with pytest.raises(ValueError, match="set to a value by another"):
        changes_of(["retrieval=1", "retrieval.top_k=2"])


@pytest.mark.parametrize("pairs", [["retrieval.top_k=2", "retrieval=1"],
                                   ["retrieval.top_k=2", 'retrieval={"mode": "dense"}'],
                                   ["retrieval.top_k=2", "retrieval.top_k=3"]])
def test_a_later_set_never_silently_replaces_an_earlier_one(pairs: list[str]) -> None:
    with pytest.raises(ValueError, match="another --set"):
        changes_of(pairs)
