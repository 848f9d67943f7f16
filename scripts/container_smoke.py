"""Smoke test of the containers (docker-compose.test.yml): Freki and Geri run from the runtime image, this
script from the test image. Waits until both report SERVING, indexes scripts/sample_corpus through Odin,
retrieves, asks a grounded question and checks the answer cites the right document. Exit 0 when it all
holds, 1 otherwise (the reason on stderr).

    python -m scripts.container_smoke --freki 127.0.0.1:50061 --geri 127.0.0.1:50062
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from odin_client import OdinClient, OdinSettings
from scripts.common import SAMPLE_CORPUS

CORPUS = SAMPLE_CORPUS


def wait_serving(target: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with grpc.insecure_channel(target) as channel:
                reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"smoke: {target} did not report SERVING within {timeout_s:.0f} s")
        time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--freki", default="127.0.0.1:50061")
    parser.add_argument("--geri", default="127.0.0.1:50062")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    started = time.monotonic()
    wait_serving(args.freki, args.timeout)
    wait_serving(args.geri, args.timeout)
    print(f"smoke: both SERVING after {time.monotonic() - started:.1f} s", flush=True)
    settings = OdinSettings(freki_target=args.freki, geri_target=args.geri, generate_deadline_s=300,
                            index_deadline_s=300)
    with OdinClient(settings) as odin:
        results = odin.index([CORPUS], stop_on_error=True)
        print(f"smoke: indexed {len(results)} documents", flush=True)
        hit = odin.retrieve("Which port does the Hrafn Relay admin API listen on?", top_k=1).sources[0]
        if Path(hit.source).name != "networking.md" or "9427" not in hit.content:
            print(f"smoke: retrieval returned {hit.source!r}", file=sys.stderr)
            return 1
        answer = odin.ask("Which port does the Hrafn Relay admin API listen on?", top_k=3)
        print(f"smoke: answered={answer.answered} text={answer.text!r}", flush=True)
        if answer.answered and not any("9427" in c.quote for c in answer.citations):
            print("smoke: the answer does not cite the sentence with the port", file=sys.stderr)
            return 1
        if not answer.answered and "min_score" in answer.reason:  # Geri abstained before asking its model
            print(f"smoke: abstained before generation: {answer.reason}", file=sys.stderr)
            return 1
    print(f"smoke: OK in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
