"""The ``geri`` console script and settings sources: file < env < arguments; SIGTERM stops cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from geri.cli import main
from geri.service import SERVICE_NAME
from geri.settings import GeriSettings
from tests.geri.geri_servers_support import free_port
from wolf_service.settings import SettingsError


def test_settings_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "geri.json"
    config.write_text(json.dumps({"port": 6001, "backend": "ollama", "ollama_model": "from-file", "num_ctx": 2048}))
    monkeypatch.setenv("GERI_OLLAMA_MODEL", "from-env")
    settings = GeriSettings.load(config, num_ctx=1024)
    assert settings.port == 6001 and settings.backend == "ollama"  # file over defaults
    assert settings.ollama_model == "from-env"  # env over file
    assert settings.num_ctx == 1024  # arguments over everything


def test_defaults_use_the_embedded_backend() -> None:
    settings = GeriSettings()
    assert settings.backend == "embedded" and settings.embedded_model_name == "smollm2-135m-instruct"


def test_invalid_setting_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"backend": "gpt"}))
    with pytest.raises(SettingsError, match="bad.json"):
        GeriSettings.load(config)


def test_backend_flag_takes_every_backend_the_settings_take() -> None:
    from typing import get_args

    from geri.cli import _parser
    from geri.settings import BackendKind

    for kind in get_args(BackendKind):  # "openai" too: docs/geri.md's OpenAI-compatible servers
        assert _parser().parse_args(["serve", "--backend", kind]).backend == kind


def test_cli_reports_a_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--config", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in capsys.readouterr().err


def _geri_command() -> list[str]:
    script = Path(sys.executable).parent / "geri"
    return [str(script)] if script.exists() else [sys.executable, "-m", "geri.cli"]


def test_geri_serve_without_its_backend_is_up_but_not_serving_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GERI_")}
    # The Ollama backend starts without its server (it may come up later): the process serves gRPC
    # (health answers) but reports NOT_SERVING until a backend answers; no model load is needed.
    env["GERI_OLLAMA_HOST"] = f"http://127.0.0.1:{free_port()}"
    log = tmp_path / "geri.log"
    proc = subprocess.Popen(
        [*_geri_command(), "serve", "--backend", "ollama", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 60
            status = None
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    status = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=2).status
                    break
                except grpc.RpcError:
                    time.sleep(0.2)
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING, log.read_text()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"geri serve did not stop within 30 s of SIGTERM; its log:\n{log.read_text()}")
        assert code == 0, log.read_text()
        assert "SIGTERM" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
