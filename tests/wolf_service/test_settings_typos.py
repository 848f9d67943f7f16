"""Misspelled settings are refused with a suggestion: in files at any depth, and in environment variables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freki.settings import FrekiSettings
from geri.settings import GeriSettings
from odin_client.settings import OdinSettings
from wolf_service.settings import SettingsError


def write(tmp_path: Path, data: dict) -> Path:  # type: ignore[type-arg]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("cls", "data", "says"), [
    (FrekiSettings, {"retrieval": {"topk": 8}}, "unknown setting 'retrieval.topk'; did you mean 'retrieval.top_k'?"),
    (FrekiSettings, {"watch": {"folders": [{"path": "/tmp", "exlude": []}]}},
     "'watch.folders[0].exlude'; did you mean 'watch.folders[0].exclude'?"),
    (FrekiSettings, {"limts": {}}, "did you mean 'limits'?"),
    (GeriSettings, {"sessions": {"ttl": 5}}, "did you mean 'sessions.ttl_s'?"),
    (GeriSettings, {"models": [{"name": "a", "backend": "ollama", "modle": "x"}]}, "'models[0].modle'"),
    (GeriSettings, {"ollama_modle": "x"}, "did you mean 'ollama_model'?"),
    (OdinSettings, {"freki_targt": "x"}, "did you mean 'freki_target'?"),
])
def test_unknown_keys_in_a_file_are_refused_with_a_suggestion(tmp_path: Path, cls, data, says) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SettingsError) as err:
        cls.load(write(tmp_path, data))
    assert says in str(err.value) and "settings.json" in str(err.value)


@pytest.mark.parametrize(("cls", "var", "says"), [
    (FrekiSettings, "FREKI_RETRIEVAL__TOPK", "did you mean FREKI_RETRIEVAL__TOP_K?"),
    (FrekiSettings, "FREKI_DATADIR", "did you mean FREKI_DATA_DIR?"),
    (GeriSettings, "GERI_OLAMA_HOST", "did you mean GERI_OLLAMA_HOST?"),
    (OdinSettings, "ODIN_FREKI_TARGT", "did you mean ODIN_FREKI_TARGET?"),
])
def test_unknown_environment_variables_are_refused(monkeypatch, cls, var: str, says: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(var, "8")
    with pytest.raises(SettingsError) as err:
        cls.load()
    assert f"unknown environment variable {var}; {says}" in str(err.value)


def test_known_variables_and_foreign_ones_that_share_the_prefix_load(monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FREKI_RETRIEVAL__TOP_K", "8")
    monkeypatch.setenv("freki_metrics__port", "9999")  # env names are case-insensitive
    monkeypatch.setenv("FREKI_API_KEY", "read by `freki export`")
    monkeypatch.setenv("FREKI_SETTINGS_FILE", str(write(tmp_path, {"data_dir": str(tmp_path)})))
    settings = FrekiSettings.load()
    assert settings.retrieval.top_k == 8 and settings.metrics.port == 9999 and settings.data_dir == tmp_path


def test_geri_listens_on_loopback_unless_told_otherwise() -> None:
    assert GeriSettings().host == "127.0.0.1" == FrekiSettings().host
