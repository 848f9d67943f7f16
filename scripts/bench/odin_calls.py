"""Odin's own cost per call: the blocking and the asyncio client against an in-process Freki that answers at once.

    python -m scripts.bench.odin_calls [--calls 3000]

The servicer does no work, so what is measured is the client (request, spec, attempts, conversion) plus gRPC on
loopback; the raw stub's time is printed alongside as the floor. Only the public import surface is used, so the
same script measures any version of odin_client.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from concurrent import futures

import grpc
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from odin_client import AsyncOdinClient, OdinClient, OdinSettings


class InstantFreki(freki_pb2_grpc.FrekiServiceServicer):
    """Answers RetrieveContext with one document and GetIndexStatus with counts, at once."""

    def RetrieveContext(self, request, context):  # noqa: N802 - the RPC's name
        doc = common_pb2.RetrievedDocument(document_id="d", content="t", relevance_score=0.5)
        return common_pb2.WolfResponse(request_id=request.request_id,
                                       rag_context=common_pb2.RAGContext(documents=[doc]))

    def GetIndexStatus(self, request, context):  # noqa: N802
        return freki_pb2.IndexStatus(document_count=1, chunk_count=1)


def _per_call_us(run: Callable[[int], object], calls: int, rounds: int = 5) -> float:
    """Median over ``rounds`` of the process CPU microseconds per call (client, server and gRPC threads: on a
    busy box CPU time varies far less than wall time)."""
    times = []
    for _ in range(rounds):
        start = time.process_time()
        run(calls)
        times.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(times)


def main() -> None:
    """Print microseconds per call for the raw stub, OdinClient and AsyncOdinClient."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    freki_pb2_grpc.add_FrekiServiceServicer_to_server(InstantFreki(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    target = f"127.0.0.1:{port}"
    settings = OdinSettings(freki_target=target)
    try:
        with grpc.insecure_channel(target) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            raw = _per_call_us(lambda n: [stub.RetrieveContext(common_pb2.WolfRequest(prompt="q"), timeout=5)
                                          for _ in range(n)], args.calls)
        with OdinClient(settings) as odin:
            blocking = _per_call_us(lambda n: [odin.retrieve("q") for _ in range(n)], args.calls)
            status = _per_call_us(lambda n: [odin.status() for _ in range(n)], args.calls)

        async def awaited(n: int) -> None:
            async with AsyncOdinClient(settings) as client:
                for _ in range(n):
                    await client.retrieve("q")

        aio = _per_call_us(lambda n: asyncio.run(awaited(n)), args.calls)
    finally:
        server.stop(None)
    print(f"raw stub RetrieveContext      {raw:8.1f} µs CPU/call")
    print(f"OdinClient.retrieve           {blocking:8.1f} µs CPU/call  (+{blocking - raw:.1f} over the stub)")
    print(f"OdinClient.status             {status:8.1f} µs CPU/call")
    print(f"AsyncOdinClient.retrieve      {aio:8.1f} µs CPU/call")


if __name__ == "__main__":
    main()
