"""Starting real third-party servers for tests on loopback: a free port, waiting until one answers, stopping it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port that was free a moment ago (the servers bind it right after)."""
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
    """Terminate a server a test started, and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_ollama_proxy(backend_url: str, port: int, log: Path, models: str) -> subprocess.Popen[bytes]:
    """ollama-proxy-plus (a dev dependency) on ``port`` in front of the OpenAI-compatible ``backend_url``,
    serving ``models`` (comma-separated, ``local/<backend model>``); waits until it answers."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PROVIDERS_LOCAL_BASE_URL": backend_url,
           "PROVIDERS_LOCAL_API_KEY": "EMPTY", "EXTRA_MODELS": models}
    proc = subprocess.Popen([str(VENV_BIN / "ollama-proxy"), "serve", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, 60, log)
    except BaseException:
        stop(proc)
        raise
    return proc
