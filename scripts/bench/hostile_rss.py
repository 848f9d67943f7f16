"""Peak memory of a real ``freki serve`` for each hostile document, default limits.

The documents: tests/freki/api/hostile_documents_support.py.

For every input: the status and message it gets, the peak RSS of the server process and of its parser
workers while the call runs (sampled every 5 ms), and the call's time. Then how long indexing goes on after
the client's deadline passes (from the server's access log). Loopback only.

    .venv/bin/python -m scripts.bench.hostile_rss
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import psutil
from wolf.v1 import freki_pb2, freki_pb2_grpc

from scripts.common import REPO, child_pythonpath
from tests.freki.api.hostile_documents_support import cases


def main() -> int:
    data_dir = Path(tempfile.mkdtemp(prefix="freki-hostile-"))
    config = data_dir / "freki.json"
    config.write_text(json.dumps({"data_dir": str(data_dir / "data")}))
    log = data_dir / "freki.log"
    env = {**os.environ, "PYTHONPATH": child_pythonpath(), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen([sys.executable, "-m", "freki.cli", "serve", "--config", str(config), "--port", "0"],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    assert server.stdout is not None
    address = server.stdout.readline().rsplit(" ", 1)[-1].strip()
    process = psutil.Process(server.pid)
    stub = freki_pb2_grpc.FrekiServiceStub(grpc.insecure_channel(address,
                                                                 options=[("grpc.max_send_message_length", 2**27)]))
    stub.IndexDocument(freki_pb2.IndexDocumentRequest(request_id="c", document_id="canary", content="A canary."),
                       timeout=60)
    print(f"server RSS at rest: {process.memory_info().rss / 2**20:.0f} MiB; load {os.getloadavg()}")
    print("| input | size | status | message | server peak RSS MiB | worker peak RSS MiB | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name, fields, _, _ in cases():
        peaks = [0.0, 0.0]
        done = threading.Event()

        def sample(peaks: list[float] = peaks, done: threading.Event = done) -> None:
            while not done.is_set():
                try:
                    peaks[0] = max(peaks[0], process.memory_info().rss)
                    peaks[1] = max(peaks[1], sum(c.memory_info().rss for c in process.children(recursive=True)))
                except psutil.Error:
                    pass
                time.sleep(0.005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.perf_counter()
        try:
            stub.IndexDocument(freki_pb2.IndexDocumentRequest(request_id=name, document_id=name, source=name,
                                                              **fields), timeout=120)
            status, message = "OK", ""
        except grpc.RpcError as exc:
            status, message = exc.code().name, exc.details()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
        size = len(fields.get("content_bytes") or fields.get("content", "").encode())
        print(f"| {name} | {size:,} B | {status} | {message[:110]} | {peaks[0] / 2**20:.0f} | "
              f"{peaks[1] / 2**20:.0f} | {seconds:.2f} |")
    text = "\n\n".join(f"Paragraph {i} of a long report about harbour {i} and its tides." for i in range(6000))
    for deadline in (1.0, 3.0):
        try:
            stub.IndexDocument(freki_pb2.IndexDocumentRequest(request_id=f"late-{deadline}", document_id="late",
                                                              content=text), timeout=deadline)
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED, exc
        time.sleep(3)
        lines = [line for line in log.read_text().splitlines() if f'"request_id": "late-{deadline}"' in line
                 and "IndexDocument" in line and "wolf_service.access" in line]
        took = float(re.search(r'"duration_ms": ([0-9.]+)', lines[-1]).group(1)) if lines else float("nan")
        print(f"deadline {deadline:.0f} s: the server stopped indexing {took / 1000 - deadline:.2f} s after it")
    server.send_signal(signal.SIGTERM)
    server.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
