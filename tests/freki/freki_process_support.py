"""A real ``freki serve`` in a child process, for tests that kill it (SIGKILL, ``WOLF_FAULT_POINT``) and
start it again on the same data dir."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
from wolf.v1 import freki_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]


class FrekiProcess:
    """``freki serve --config config`` on a free port, stderr appended to ``log``; ``fault`` names the
    ``wolf_service.faults`` point at which the process kills itself ("none": never)."""

    @staticmethod
    def command(config: Path, fault: str = "none") -> tuple[list[str], dict[str, str]]:
        """The ``freki serve`` command line and environment."""
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'protos'}", "HF_HUB_OFFLINE": "1",
               "WOLF_FAULT_POINT": fault}
        return [sys.executable, "-m", "freki.cli", "serve", "--config", str(config), "--port", "0"], env

    @classmethod
    def run_to_exit(cls, config: Path, log: Path, timeout: float = 180) -> int:
        """Run ``freki serve`` expecting it to stop on its own (a refused start-up); its exit code."""
        args, env = cls.command(config)
        with log.open("a") as err:
            return subprocess.run(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                  timeout=timeout, check=False).returncode

    def __init__(self, config: Path, log: Path, fault: str = "none") -> None:
        args, env = self.command(config, fault)
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=open(log, "a"), text=True,  # noqa: SIM115
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise AssertionError(f"freki did not start: {line!r}\n{log.read_text()[-3000:]}")
        self.address = line.rsplit(" ", 1)[-1].strip()
        self.channel = grpc.insecure_channel(self.address)
        self.stub = freki_pb2_grpc.FrekiServiceStub(self.channel)

    def wait_dead(self) -> int:
        """The exit code of a process that kills itself (a fault point)."""
        self.channel.close()
        return self.proc.wait(60)

    def stop(self) -> None:
        """SIGTERM, and a clean exit."""
        self.channel.close()
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(60) == 0
