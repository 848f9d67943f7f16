"""docker-compose files, Dockerfile and container settings: validated without a Docker engine.

The real check-jsonschema validates both compose files against the Compose spec; the rest
checks what the schema cannot: names that must refer to each other, paths that must exist,
and that the settings files the containers mount load into the services' settings models
with the compose environment applied.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from wolf.v1 import freki_pb2, geri_pb2

from freki.settings import FrekiSettings
from geri.settings import GeriSettings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILES = ("docker-compose.yml", "docker-compose.test.yml", "docker-compose.scale.yml")


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / name).read_text())


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_file_matches_the_compose_spec(name: str) -> None:
    tool = Path(sys.executable).with_name("check-jsonschema")
    out = subprocess.run([str(tool), "--builtin-schema", "vendor.compose-spec", str(ROOT / name)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_every_reference_resolves(name: str) -> None:
    compose = load(name)
    services: dict[str, Any] = compose["services"]
    declared_volumes = set((compose.get("volumes") or {}).keys())
    for svc_name, svc in services.items():
        deps = svc.get("depends_on") or {}
        for dep in deps if isinstance(deps, list) else deps.keys():
            assert dep in services, f"{svc_name} depends on unknown service {dep!r}"
        for volume in svc.get("volumes") or []:
            source = (volume["source"] if isinstance(volume, dict) else volume.split(":")[0])
            if source.startswith((".", "/")):
                assert (ROOT / source).exists(), f"{svc_name} mounts missing path {source}"
            else:
                assert source in declared_volumes, f"{svc_name} uses undeclared volume {source!r}"
        build = svc.get("build")
        if build:
            context = ROOT / (build if isinstance(build, str) else build.get("context", "."))
            assert context.is_dir(), f"{svc_name}: build context {context} is missing"
            dockerfile = context / (build.get("dockerfile", "Dockerfile") if isinstance(build, dict) else "Dockerfile")
            assert dockerfile.is_file(), f"{svc_name}: {dockerfile} is missing"
            target = build.get("target") if isinstance(build, dict) else None
            if target:
                assert re.search(rf"^FROM .+ AS {target}$", dockerfile.read_text(), re.M), \
                    f"{svc_name}: {dockerfile.name} has no stage {target!r}"
    unused = declared_volumes - {
        (v["source"] if isinstance(v, dict) else v.split(":")[0])
        for svc in services.values() for v in svc.get("volumes") or []
    }
    assert not unused, f"declared but unused volumes: {unused}"


def test_stack_has_health_checks_and_start_order() -> None:
    services = load("docker-compose.yml")["services"]
    assert {"qdrant", "ollama", "ollama-pull", "freki", "geri"} <= services.keys()
    for name in ("qdrant", "ollama", "freki", "geri"):
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no health check"
    expected = {
        "freki": freki_pb2.DESCRIPTOR.services_by_name["FrekiService"].full_name,
        "geri": geri_pb2.DESCRIPTOR.services_by_name["GeriService"].full_name,
    }
    for name, grpc_service in expected.items():
        test = services[name]["healthcheck"]["test"]
        assert "wolf_service.healthcheck" in test and grpc_service in test
    assert services["freki"]["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert services["geri"]["depends_on"]["ollama-pull"]["condition"] == "service_completed_successfully"
    assert services["ollama-pull"]["entrypoint"][:2] == ["ollama", "pull"]
    volumes = {v.split(":")[1] for v in services["qdrant"]["volumes"]}
    assert "/qdrant/storage" in volumes
    assert any(v.startswith("./watch:") for v in services["freki"]["volumes"])


def _container_settings(service: str, monkeypatch: pytest.MonkeyPatch, file: str = "docker-compose.yml") -> Any:
    """Load the settings file a service mounts, with the compose environment applied."""
    svc = load(file)["services"][service]
    config = svc["command"][svc["command"].index("--config") + 1]
    mount = next(v for v in svc["volumes"] if v.split(":")[1] == config)
    for key, value in svc["environment"].items():
        # Compose would substitute ${VAR:-default}; the default is what an unset VAR gives.
        monkeypatch.setenv(key, re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value)))
    cls = FrekiSettings if service == "freki" else GeriSettings
    return cls.load(ROOT / mount.split(":")[0])


def test_container_settings_files_are_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    freki = _container_settings("freki", monkeypatch)
    assert (freki.store.backend, freki.store.url) == ("remote", "http://qdrant:6333")
    assert freki.host == "0.0.0.0" and freki.metrics.port == 9464
    assert [str(f.path) for f in freki.watch.folders] == ["/watch"]
    geri = _container_settings("geri", monkeypatch)
    assert (geri.backend, geri.ollama_host, geri.ollama_model) == ("ollama", "http://ollama:11434", "llama3.2")
    assert geri.metrics.port == 9465
    ports = {int(p.split(":")[-1]) for s in ("freki", "geri")
             for p in load("docker-compose.yml")["services"][s]["ports"]}
    assert {freki.port, geri.port, freki.metrics.port, geri.metrics.port} <= ports


def test_scaled_stack_shares_what_replicas_must_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """docker-compose.scale.yml: settings load, replicas share the key store, lease and sessions (docs/scaling.md)."""
    compose = load("docker-compose.scale.yml")["services"]
    freki = _container_settings("freki", monkeypatch, "docker-compose.scale.yml")
    assert freki.store.backend == "remote" and freki.store.shared
    shared = {v.split(":")[1] for v in compose["freki"]["volumes"] if v.startswith("shared:")}
    assert shared == {"/shared"}
    assert str(freki.gdpr.keys_path).startswith("/shared/") and str(freki.watch.lease_file).startswith("/shared/")
    for key in [k for k in compose["freki"]["environment"]]:
        monkeypatch.delenv(key, raising=False)
    geri = _container_settings("geri", monkeypatch, "docker-compose.scale.yml")
    assert (geri.backend, geri.openai_base_url) == ("openai", "http://vllm:8000/v1")
    assert geri.sessions.store == "sqlite" and str(geri.sessions.path).startswith("/shared/")
    gateway = compose["gateway"]["environment"]
    from odin_client import OdinSettings
    for key, value in gateway.items():
        monkeypatch.setenv(key, str(value))
    odin = OdinSettings()
    assert odin.load_balancing == "round_robin" and odin.freki_target.startswith("dns:///")
    assert all(compose[s]["deploy"]["replicas"] >= 2 for s in ("freki", "geri"))


def test_dockerfile_installs_cpu_torch_before_the_project() -> None:
    text = (ROOT / "docker" / "Dockerfile").read_text()
    torch = text.index("pip install torch==2.13.0")
    project = re.search(r'pip install "?\.', text).start()  # type: ignore[union-attr]
    assert torch < project and "download.pytorch.org/whl/cpu" in text
    for copied in re.findall(r"^COPY (\S+) ", text, re.M):
        assert (ROOT / copied).exists(), f"Dockerfile copies missing {copied}"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and ".git" in ignored


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_commands_run_scripts_and_folders_that_exist(name: str) -> None:
    """A container command names project scripts as modules (``python -m scripts.…``) or files that exist here:
    a moved script breaks this test, not the container."""
    for svc_name, svc in load(name)["services"].items():
        command = svc.get("command") or []
        args = command if isinstance(command, list) else command.split()
        for i, arg in enumerate(args):
            if arg == "-m" and args[i + 1].startswith("scripts."):
                module = ROOT / (args[i + 1].replace(".", "/") + ".py")
                assert module.is_file(), f"{svc_name} runs a missing module {args[i + 1]}"
            elif arg.endswith(".py"):
                assert (ROOT / arg).is_file(), f"{svc_name} runs a missing file {arg}"


def test_dockerfile_changes_only_into_folders_that_exist() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    for folder in re.findall(r"^RUN cd (\S+) ", dockerfile, re.M):
        assert (ROOT / folder).is_dir(), f"the Dockerfile changes into a missing folder {folder}"
