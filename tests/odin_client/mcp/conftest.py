"""Fixtures of the MCP tests: a real Freki (packaged embedding model, embedded Qdrant engine) and a real Geri
(embedded SmolLM2), both requiring API keys, with a few documents in two tenants; and ``odin mcp`` started as
its own process, as an agent or a deployment would start it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from odin_client import OdinClient, OdinSettings
from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401
from tests.local_servers_support import free_port, stop
from wolf_service.auth import hash_key
from wolf_service.serving import ServerHandle

ROOT = Path(__file__).resolve().parents[3]
KEYS = {"acme-rw": ("acme", ["read", "write", "delete"], "rw-key-0123456789abcdef"),
        "acme-ro": ("acme", ["read"], "ro-key-0123456789abcdef"),
        "globex-rw": ("globex", ["read", "write"], "globex-key-0123456789abcdef")}
HANDBOOK = """---
title: Hrafn Relay handbook
team: platform
---
# Admin API

The Hrafn Relay admin API listens on TCP port 7431. Error HR-4012 means the relay certificate expired;
renew it with `hrafn cert renew`. See [[Coolant Spec]].
"""
COOLANT = "---\ntitle: Coolant Spec\n---\n# Coolant Spec\n\nThe coolant is liquid helium mixed with argon.\n"
GLOBEX = "# Globex payroll\n\nGlobex pays salaries on the 28th of every month.\n"


def key_entries() -> list[dict[str, Any]]:
    """The keys as Freki, Geri and the MCP server store them (hashed)."""
    return [{"name": name, "tenant": tenant, "scopes": scopes, "sha256": hash_key(secret)}
            for name, (tenant, scopes, secret) in KEYS.items()]


def secret(name: str) -> str:
    """The raw key a client sends."""
    return KEYS[name][2]


@pytest.fixture(scope="session")
def keyed_freki(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[ServerHandle]:
    """Freki with the test keys and three documents: two in tenant acme (one links to the other), one in globex."""
    from freki.api.server import build_server
    from freki.engine import FrekiEngine
    from freki.settings import FrekiSettings

    settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("mcp-freki"),
                             shutdown_grace_s=1.0, security={"api_keys": key_entries()},
                             chunking={"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
                             # The crowd tests measure the MCP server: 100 agents of one tenant at once would
                             # otherwise meet Freki's per-tenant concurrency limit (see the rate-limit tests).
                             max_workers=32, rate_limits={"per_tenant": {"concurrent": 0}})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with OdinClient(OdinSettings(freki_target=handle.address, api_key=secret("acme-rw"))) as acme:
            acme.index_text(HANDBOOK, source="ops/handbook.md", content_type="markdown")
            acme.index_text(COOLANT, source="specs/coolant.md", content_type="markdown")
        with OdinClient(OdinSettings(freki_target=handle.address, api_key=secret("globex-rw"))) as globex:
            globex.index_text(GLOBEX, source="hr/payroll.md", content_type="markdown")
        yield handle
    finally:
        handle.stop(1.0)
        engine.close()


@pytest.fixture(scope="session")
def keyed_geri(embedded_backend: Any) -> Iterator[ServerHandle]:  # noqa: F811
    """Geri (embedded SmolLM2) with the same keys."""
    with start_geri(geri_settings(security={"api_keys": key_entries()}), embedded_backend) as handle:
        yield handle


def child_env(**extra: str) -> dict[str, str]:
    """The environment of an ``odin mcp`` process: this worktree's code, no inherited service settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FREKI_", "GERI_", "ODIN_"))}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{ROOT / 'protos'}"
    env.update(extra)
    return env


def odin_mcp_args(freki: ServerHandle, geri: ServerHandle, *more: str) -> list[str]:
    """Arguments of ``python -m odin_client.cli mcp`` against the test services."""
    return ["-m", "odin_client.cli", "mcp", "--freki", freki.address, "--geri", geri.address, *more]


@pytest.fixture(scope="session")
def mcp_http(keyed_freki: ServerHandle, keyed_geri: ServerHandle,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``odin mcp --transport http`` on a free port with the test keys; yields the endpoint URL."""
    folder = tmp_path_factory.mktemp("mcp-http")
    config = folder / "mcp.json"
    config.write_text(json.dumps({"api_keys": key_entries(), "max_sessions": 40}), encoding="utf-8")
    port = free_port()
    log = folder / "server.log"
    proc = subprocess.Popen([sys.executable, *odin_mcp_args(keyed_freki, keyed_geri, "--transport", "http", "--port",
                                                            str(port), "--config", str(config))],
                            env=child_env(), stdout=log.open("ab"), stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_listening(url, proc, log)
        yield url
    finally:
        stop(proc)


def wait_listening(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 60) -> None:
    """Wait until the endpoint answers at all (401 without a key counts), or fail with the server's log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"odin mcp exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            httpx.post(url, json={}, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} not answering after {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")


ToolCall = Callable[..., Any]
