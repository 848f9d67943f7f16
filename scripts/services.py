"""Start and stop the project's services as child processes, as deployed (the demo and the benchmarks).

A service runs ``python -m <name>.cli serve`` in a session of its own, so a terminal's Ctrl-C reaches the script
first and the script stops its services in order.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from scripts.common import REPO, child_pythonpath

if TYPE_CHECKING:
    from freki.settings import FrekiSettings

STOP_TIMEOUT_S = 40.0


@dataclass
class Service:
    """A service subprocess and where its output goes."""

    name: str
    title: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]

    @property
    def target(self) -> str:
        """host:port clients use."""
        return f"127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 25) -> str:
        """Last lines of the service's log, for error messages."""
        self.log_file.flush()
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join("    " + line for line in text[-lines:])


def free_port() -> int:
    """A currently free TCP port on loopback (the service binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_service(name: str, title: str, args: list[str], port: int, log_dir: Path) -> Service:
    """Start ``python -m <name>.cli serve ...`` with its output in ``log_dir/<name>.log``."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = child_pythonpath()
    log_path = log_dir / f"{name}.log"
    log_file = log_path.open("wb")
    cmd = [sys.executable, "-m", f"{name}.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    print(f"starting {title}: {' '.join(cmd[1:])}  (log: {log_path})", flush=True)
    # A new session keeps the terminal's Ctrl-C away from the children: we stop them in order.
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                            start_new_session=True)
    return Service(name, title, port, proc, log_path, log_file)


def wait_serving(services: Sequence[Service], timeout_s: float) -> None:
    """Poll grpc.health.v1 until every service reports SERVING.

    Raises:
        RuntimeError: a service exited, or the timeout passed; the message includes its log tail.
    """
    deadline = time.monotonic() + timeout_s
    start = time.monotonic()
    pending = list(services)
    names = ", ".join(f"{s.title} on {s.target}" for s in pending)
    print(f"waiting up to {timeout_s:.0f}s for {names} to report SERVING (loading models)...", flush=True)
    channels = {s.name: grpc.insecure_channel(s.target) for s in pending}
    try:
        while pending:
            for svc in list(pending):
                if svc.proc.poll() is not None:
                    raise RuntimeError(f"{svc.title} exited with code {svc.proc.returncode} while starting:\n"
                                       f"{svc.log_tail()}")
                try:
                    reply = health_pb2_grpc.HealthStub(channels[svc.name]).Check(
                        health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        print(f"  {svc.title} is SERVING after {time.monotonic() - start:.1f}s", flush=True)
                        pending.remove(svc)
                except grpc.RpcError:
                    pass  # not listening yet
            if pending and time.monotonic() > deadline:
                raise RuntimeError(
                    f"{', '.join(s.title for s in pending)} not SERVING after {timeout_s:.0f}s; last log lines:\n"
                    + "\n".join(s.log_tail() for s in pending))
            if pending:
                time.sleep(0.5)
    finally:
        for channel in channels.values():
            channel.close()


def stop_service(svc: Service) -> None:
    """SIGTERM, wait for a clean exit (in-flight calls finish), SIGKILL only as a last resort."""
    if svc.proc.poll() is None:
        svc.proc.send_signal(signal.SIGTERM)
        try:
            svc.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"{svc.title} did not stop within {STOP_TIMEOUT_S:.0f}s; killing it", file=sys.stderr)
            svc.proc.kill()
            svc.proc.wait()
    svc.log_file.close()
    print(f"stopped {svc.title} (exit code {svc.proc.returncode})", flush=True)


@contextlib.contextmanager
def freki_process(settings: FrekiSettings, title: str = "Freki (bench)", timeout_s: float = 180,
                  pid: list[int] | None = None) -> Iterator[str]:
    """``freki serve`` with ``settings`` in its own process, as deployed; yields its address when SERVING
    (and appends the server's process id to ``pid`` when given).

    Load generated in the server's own process (client threads, asyncio tasks) would compete with it
    for the GIL and measure the client too.
    """
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "freki.json"
        config.write_text(json.dumps(settings.model_dump(mode="json", exclude={"port", "host"})))
        service = start_service("freki", title, ["--config", str(config), "--log-level", "WARNING"],
                                free_port(), Path(tmp))
        try:
            wait_serving([service], timeout_s=timeout_s)
            if pid is not None:
                pid.append(service.proc.pid)
            yield service.target
        finally:
            stop_service(service)
