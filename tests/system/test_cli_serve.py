"""`freki serve` as a real process: JSON logs on stderr, metrics, SIGHUP reload, refused restart-only
change, SIGTERM shutdown — the way an operator runs it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Process:
    """A child process whose stderr JSON lines are collected by a thread."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.raw.append(line)
            try:
                self.lines.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # collected in raw; tests assert there are none

    def stops(self, timeout: float = 60.0) -> int:
        """SIGTERM, then the exit code; a process still running after ``timeout`` is asked for its threads'
        stacks (SIGUSR1) and killed, and the assertion carries them."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            self.proc.kill()
            self.proc.wait(timeout=30)
            stderr = "".join(self.raw)[-6000:]
            raise AssertionError(f"still running {timeout:.0f} s after SIGTERM; stderr:\n{stderr}") from exc

    def wait_for(self, text: str, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in list(self.lines):
                if text in entry.get("msg", ""):
                    return entry
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"no log line containing {text!r}; stderr:\n{''.join(self.raw)[-3000:]}")


def test_freki_serve_reloads_on_sighup_and_stops_on_sigterm(tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    config = tmp_path / "freki.json"
    settings = {"host": "127.0.0.1", "port": port, "data_dir": str(tmp_path / "data"),
                "metrics": {"port": metrics_port}, "reload": {"poll_interval_s": 0},
                "retrieval": {"top_k": 5}}
    config.write_text(json.dumps(settings))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = Process([sys.executable, "-m", "freki.cli", "serve", "--config", str(config)], env)
    try:
        proc.wait_for("Freki serving on")
        probe = subprocess.run([sys.executable, "-m", "wolf_service.healthcheck", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=60, check=False)
        assert probe.returncode == 0, probe.stderr
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as reply:
            assert b'wolf_rpc_requests_total{code="OK",method="Health/Check",service="freki"} 1.0' in reply.read()

        config.write_text(json.dumps({**settings, "retrieval": {"top_k": 8}, "log": {"level": "DEBUG"}}))
        proc.proc.send_signal(signal.SIGHUP)
        applied = proc.wait_for("settings reloaded (SIGHUP)")
        assert applied["applied_fields"] == "log.level,retrieval.top_k" and applied["level"] == "INFO"

        config.write_text(json.dumps({**settings, "port": free_port()}))
        proc.proc.send_signal(signal.SIGHUP)
        refused = proc.wait_for("settings reload (SIGHUP) refused")
        assert refused["level"] == "WARNING" and refused["refused_fields"] == "port"

        config.write_text("{not json")
        proc.proc.send_signal(signal.SIGHUP)
        assert proc.wait_for("keeping the current settings")["level"] == "ERROR"

        from odin_client import OdinClient, OdinSettings

        with OdinClient(OdinSettings(freki_target=f"127.0.0.1:{port}")) as odin:
            odin.index_text("The Fenrir gate opens at dusk.", source="gate.md")
            assert odin.retrieve("When does the Fenrir gate open?").sources[0].source == "gate.md"
        # A second Freki on the same data dir: one line saying why, exit code 3, no traceback.
        config.write_text(json.dumps(settings))
        second = subprocess.run([sys.executable, "-m", "freki.cli", "serve", "--config", str(config),
                                 "--port", str(free_port())], capture_output=True, text=True, env=env, timeout=180)
        assert second.returncode == 3, second.stderr
        last = json.loads(second.stderr.strip().splitlines()[-1])
        assert last["level"] == "ERROR" and "is in use by another process" in last["msg"]
        assert all(json.loads(line) for line in second.stderr.splitlines())

        assert proc.stops() == 0
        proc.wait_for("stopped")
        assert [line for line in proc.raw if not line.startswith("{")] == []  # JSON lines only: no bars
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(timeout=30)


@pytest.mark.parametrize("service", ["freki", "geri"])
def test_a_port_in_use_is_one_line_and_exit_3_before_any_model_loads(service: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", f"{service}.cli", "serve", "--port", str(port),
                               *(["--data-dir", str(tmp_path)] if service == "freki" else [])],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 3
    (line,) = done.stderr.splitlines()
    entry = json.loads(line)
    assert entry["msg"] == (f"{service} cannot start: cannot listen on 127.0.0.1:{port}: the port is in use by "
                            f"another process; stop it or choose another port (--port / {service.upper()}_PORT)")
    assert time.monotonic() - started < 60  # refused before loading a model (measured ~2 s)


def test_geri_serve_writes_json_lines_only(tmp_path: Path) -> None:
    port = free_port()
    # OMP_THREAD_LIMIT below torch's threads (as Tesseract's setting leaves it) once broke bf16 matmuls (0350).
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_THREAD_LIMIT": "1"}
    proc = Process([sys.executable, "-m", "geri.cli", "serve", "--port", str(port)], env)
    try:
        proc.wait_for("listening on port", timeout=240)
        from odin_client import OdinClient, OdinSettings

        with OdinClient(OdinSettings(geri_target=f"127.0.0.1:{port}", generate_deadline_s=300)) as odin:
            try:
                assert odin.generate("Say hello.", max_tokens=4).completion_tokens > 0
            except Exception as exc:  # the server's own account of the failure, for whoever reads the report
                time.sleep(0.5)
                raise AssertionError(f"{exc}; geri's stderr:\n{''.join(proc.raw)[-4000:]}") from exc
        assert proc.stops() == 0
    finally:
        if proc.proc.poll() is None:
            proc.proc.kill()
            proc.proc.wait(timeout=30)
    time.sleep(0.2)  # the reader thread drains the pipe
    assert proc.raw and [line for line in proc.raw if not line.startswith("{")] == []


def test_sigusr1_writes_every_threads_stack_to_stderr() -> None:
    # The operator's view into a service that does not answer or does not stop (wolf_service.serving).
    code = ("import os, signal, threading, time; from wolf_service.serving import StopSignals; StopSignals(); "
            "threading.Thread(target=time.sleep, args=(30,), name='stuck', daemon=True).start(); "
            "os.kill(os.getpid(), signal.SIGUSR1); time.sleep(0.5); print('alive')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "alive", done.stderr  # the dump does not stop it
    assert "Thread 0x" in done.stderr and "Current thread 0x" in done.stderr  # the stuck thread and this one
