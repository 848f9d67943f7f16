"""Wolfpack RAG end to end on a fresh machine: ``make demo`` (or ``.venv/bin/python scripts/demo.py``).

Starts Freki (retrieval) and Geri (generation, embedded SmolLM2 model) as subprocesses on free
ports, waits until both report SERVING on grpc.health.v1, indexes ``scripts/sample_corpus`` through
the Odin client, asks a question, prints the answer with its sources and timings, and stops both
services with SIGTERM — also on errors, Ctrl-C or SIGTERM to this script.

Options: ``--question``, ``--corpus``, ``--data-dir`` (default: a temporary directory, removed at
the end; ``.data/demo`` keeps the index), ``--startup-timeout``, ``--keep-running`` (leave the
services up for the ``odin`` CLI until Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "protos")]  # run from a checkout even without the editable install

from odin_client import Answer, IndexResult, OdinClient, OdinError, OdinSettings  # noqa: E402
from odin_client.cli.render import render_answer  # noqa: E402

DEFAULT_QUESTION = "Which port does the Hrafn Relay admin API listen on?"
DEFAULT_EXPECTED = "9427"
STOP_TIMEOUT_S = 40.0


class Interrupted(Exception):
    """SIGTERM/SIGINT arrived; unwinds to the ``finally`` that stops the services."""


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
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(REPO / "protos"), env.get("PYTHONPATH")]))
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


def run_demo(odin: OdinClient, corpus: Path, question: str, expected: str | None) -> Answer:
    """Index the corpus and ask the question through Odin, printing as it goes."""
    print(f"\nindexing {corpus.relative_to(REPO) if corpus.is_relative_to(REPO) else corpus} through Odin...")
    start = time.perf_counter()
    results = odin.index([corpus], stop_on_error=True)
    for result in results:
        if isinstance(result, IndexResult):
            print(f"  {result.outcome:<9} {result.source} -> {result.document_id} ({result.chunk_count} chunks)")
    print(f"indexed {len(results)} documents in {time.perf_counter() - start:.1f}s")
    status = odin.status()
    print(f"Freki index: {status.document_count} documents, {status.chunk_count} chunks, "
          f"{status.embedding_model} on {status.store_backend}")

    print(f"\nQ: {question}\nA: ", end="", flush=True)
    answer = odin.ask(question, top_k=3, max_tokens=96, temperature=0.0,
                      on_text=lambda delta: print(delta, end="", flush=True))
    print("\n" + render_answer(answer, include_text=False))
    if expected is not None:
        found = expected in answer.text
        print(f"check: answer {'mentions' if found else 'does NOT mention'} {expected!r}; top source "
              f"{answer.sources[0].source if answer.sources else '(none)'}")
    return answer


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--corpus", type=Path, default=REPO / "scripts" / "sample_corpus")
    parser.add_argument("--data-dir", type=Path, help="keep Freki's index here (default: temporary)")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument("--keep-running", action="store_true", help="leave services up until Ctrl-C")
    args = parser.parse_args(argv)

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, interrupt)

    temp_dir = None if args.data_dir else Path(tempfile.mkdtemp(prefix="wolfpack-demo-"))
    data_dir = (args.data_dir or temp_dir).resolve()
    (data_dir / "logs").mkdir(parents=True, exist_ok=True)
    services: list[Service] = []
    started = time.perf_counter()
    try:
        services.append(start_service("freki", "Freki (retrieval)", ["--data-dir", str(data_dir / "freki")],
                                      free_port(), data_dir / "logs"))
        services.append(start_service("geri", "Geri (generation)", [], free_port(), data_dir / "logs"))
        wait_serving(services, args.startup_timeout)
        settings = OdinSettings(freki_target=services[0].target, geri_target=services[1].target,
                                generate_deadline_s=600.0, index_deadline_s=600.0)
        with OdinClient(settings) as odin:
            expected = DEFAULT_EXPECTED if args.question == DEFAULT_QUESTION else None
            run_demo(odin, args.corpus.resolve(), args.question, expected)
        print(f"\ndemo finished in {time.perf_counter() - started:.1f}s")
        if args.keep_running:
            print(f"services are running; try:\n  ODIN_FREKI_TARGET={services[0].target} "
                  f"ODIN_GERI_TARGET={services[1].target} .venv/bin/odin ask \"{args.question}\"\n"
                  "press Ctrl-C to stop them")
            while all(s.proc.poll() is None for s in services):
                time.sleep(1)
        return 0
    except OdinError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as exc:
        print(f"\ninterrupted ({exc or 'Ctrl-C'}); stopping services", file=sys.stderr)
        return 130
    finally:
        # Further signals must not cut the clean shutdown short.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        for svc in reversed(services):
            stop_service(svc)
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
