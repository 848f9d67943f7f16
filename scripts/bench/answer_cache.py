"""Benchmark: a repeated grounded question with Geri's answer cache (answer_cache settings) against its first ask.

Embedded SmolLM2 in an in-process Geri, called over real gRPC (GeriService.Answer). Each question is asked
with its context once (a generation), then again with other spelling in a new session (a cache hit), then
once more with the cache off (a generation again: what the hit saved). Contexts are built here, without
Freki, so retrieval time stays out of the figures.

    .venv/bin/python -m scripts.bench.answer_cache
    .venv/bin/python -m scripts.bench.answer_cache --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import grpc
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.embedded import EmbeddedBackend
from geri.server import build_server
from geri.settings import GeriSettings

CASES = [
    ("Which port does the Skadi relay listen on?", "The Skadi relay listens on TCP port 9427 by default."),
    ("Where does the relay write its logs?", "The relay writes its logs to syslog. Rotation is daily."),
    ("How much sun do tomatoes need?", "Tomatoes need six hours of sun. Water them in the morning."),
    ("Who maintains the Hrafn gateway?", "The Hrafn gateway is maintained by the platform team in Oslo."),
    ("What is the default batch size of the importer?", "The importer reads documents in batches of 64 by default."),
]


def request(question: str, text: str, i: int, session: str = "") -> geri_pb2.AnswerRequest:
    doc = common_pb2.RetrievedDocument(document_id=f"doc-{i}", chunk_id=f"doc-{i}#0", relevance_score=0.8,
                                       content=text, source=f"doc-{i}.md")
    return geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id=f"bench-{i}", prompt=question, tenant_id="bench", context=common_pb2.RAGContext(
            documents=[doc], index_epoch=1), metadata=common_pb2.RequestMetadata(session_id=session)))


def timed(stub: geri_pb2_grpc.GeriServiceStub, req: geri_pb2.AnswerRequest) -> tuple[float, bool]:
    started = time.perf_counter()
    reply = stub.Answer(req, timeout=600)
    return time.perf_counter() - started, reply.cache_hit


def run(backend: EmbeddedBackend, cache_entries: int, rounds: int, questions: int) -> dict[str, list[float]]:
    settings = GeriSettings(host="127.0.0.1", port=0, backend="embedded", shutdown_grace_s=1.0,
                            answer_cache={"max_entries": cache_entries})
    handle = build_server(settings, backend)
    first, repeated = [], []
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            for i, (question, text) in enumerate(CASES[:questions]):
                seconds, _ = timed(stub, request(question, text, i))
                first.append(seconds)
                for r in range(rounds):
                    again, hit = timed(stub, request(f"  {question.upper()} ", text, i, session=f"s-{i}-{r}"))
                    assert hit == (cache_entries > 0), "the repeated question was not answered as configured"
                    repeated.append(again)
                print(f"cache {'on' if cache_entries else 'off'} q{i}: first {seconds:.3f} s, repeated "
                      f"{', '.join(f'{x:.3f}' for x in repeated[-rounds:])} s", flush=True)
    finally:
        handle.stop(1.0)
    return {"first_s": first, "repeated_s": repeated}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="repeats of each question")
    parser.add_argument("--questions", type=int, default=len(CASES), help=f"questions asked (at most {len(CASES)})")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    backend = EmbeddedBackend(GeriSettings(backend="embedded"))
    backend.prepare()
    try:
        cached = run(backend, 1024, args.rounds, args.questions)
        uncached = run(backend, 0, 1, args.questions)
    finally:
        backend.close()
    summary = {
        "questions": len(cached["first_s"]),
        "first_ask_median_s": statistics.median(cached["first_s"]),
        "repeated_with_cache_median_s": statistics.median(cached["repeated_s"]),
        "repeated_with_cache_max_s": max(cached["repeated_s"]),
        "repeated_without_cache_median_s": statistics.median(uncached["repeated_s"]),
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "cached": cached, "uncached": uncached}, indent=2))


if __name__ == "__main__":
    main()
