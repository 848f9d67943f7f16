"""Real LLM servers for the Geri benchmarks, on free ports, stopped on exit: ``transformers serve`` with the
packaged SmolLM2 (OpenAI-compatible), or llama.cpp's llama-server, each with ollama-proxy-plus in front (Ollama
protocol). The launchers are the test suite's (tests/geri/geri_servers_support.py, tests/local_servers_support.py).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scripts.common import REPO


@contextlib.contextmanager
def real_servers() -> Iterator[tuple[str, str, str]]:
    """transformers serve + ollama-proxy-plus on free ports: (OpenAI base URL, Ollama host, model)."""
    import subprocess

    from tests.geri.geri_servers_support import HF_DIR_NAME, VENV_BIN, export_hf_checkpoint, free_port

    workdir = Path(tempfile.mkdtemp(prefix="bench-geri-"))
    checkpoint = export_hf_checkpoint(Path(tempfile.gettempdir()) / "wolfpack-geri-hf" / HF_DIR_NAME)
    port, proxy_port = free_port(), free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(workdir)}
    serve = subprocess.Popen([str(VENV_BIN / "transformers"), "serve", "--host", "127.0.0.1", "--port", str(port),
                              "--device", "cpu", HF_DIR_NAME], cwd=checkpoint.parent, env=env,
                             stdout=(workdir / "serve.log").open("wb"), stderr=subprocess.STDOUT)
    yield from _with_proxy(serve, port, proxy_port, workdir)


def _with_proxy(serve: Any, port: int, proxy_port: int, workdir: Path) -> Iterator[tuple[str, str, str]]:
    """Wait for an OpenAI-compatible server on ``port``, put ollama-proxy-plus in front, yield (OpenAI base URL,
    Ollama URL, model), and stop both afterwards."""
    from tests.geri.geri_servers_support import OLLAMA_MODEL
    from tests.local_servers_support import start_ollama_proxy, stop, wait_http

    proxy = None
    try:
        wait_http(f"http://127.0.0.1:{port}/health", serve, 180, workdir / "serve.log")
        proxy = start_ollama_proxy(f"http://127.0.0.1:{port}/v1", proxy_port, workdir / "proxy.log", OLLAMA_MODEL)
        yield f"http://127.0.0.1:{port}/v1", f"http://127.0.0.1:{proxy_port}", OLLAMA_MODEL
    finally:
        if proxy is not None:
            stop(proxy)
        stop(serve)


@contextlib.contextmanager
def llama_servers() -> Iterator[tuple[str, str, str]]:
    """llama.cpp's llama-server (``make llama-server``) + ollama-proxy-plus: a server built for serving, as
    vLLM/TGI are, so Geri's overhead is measured against a fast backend rather than transformers serve."""
    import subprocess

    from geri.backends.embedded import default_model_path
    from tests.geri.geri_servers_support import HF_DIR_NAME, free_port

    llama = Path(os.environ.get("LLAMA_SERVER", REPO / ".tools" / "llama-server" / "llama-server"))
    if not llama.exists():
        raise SystemExit(f"{llama} not found: run `make llama-server` or set LLAMA_SERVER")
    workdir = Path(tempfile.mkdtemp(prefix="bench-geri-"))
    port, proxy_port = free_port(), free_port()
    serve = subprocess.Popen([str(llama), "-m", str(default_model_path()), "--host", "127.0.0.1", "--port", str(port),
                              "-t", "1", "--alias", HF_DIR_NAME, "-c", "4096"],
                             stdout=(workdir / "serve.log").open("wb"), stderr=subprocess.STDOUT)
    yield from _with_proxy(serve, port, proxy_port, workdir)
