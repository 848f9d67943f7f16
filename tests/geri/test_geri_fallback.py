"""Integration: the model list with real backends — fallback from a dead Ollama to the embedded model, and
gRPC health following a real Ollama-protocol server (ollama-proxy-plus) that is stopped and started again."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.server import build_server
from geri.service import SERVICE_NAME
from tests.geri.geri_servers_support import (
    OLLAMA_MODEL,
    OpenAICompatibleServer,
    free_port,
    geri_settings,
    start_ollama_proxy,
    stop,
)

pytestmark = pytest.mark.integration


def ask(prompt: str) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(request_id="fb-1", model_type=common_pb2.LLM, prompt=prompt,
                                  metadata=common_pb2.RequestMetadata(max_tokens=6, temperature=0.0))


def wait_for(check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_a_dead_ollama_falls_back_to_the_embedded_model(embedded_backend: object) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    settings = geri_settings(models=[{"name": "llama3.2", "backend": "ollama", "base_url": dead},
                                     {"name": "smollm2-135m-instruct", "backend": "embedded"}])
    handle = build_server(settings)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            llm = stub.Generate(ask("Say hi."), timeout=300).llm_response
            assert llm.backend == "embedded" and llm.model_used == "smollm2-135m-instruct" and llm.text
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
            assert health.status == health_pb2.HealthCheckResponse.SERVING  # one backend answers
            states = [(m.name, m.state) for m in stub.ListModels(geri_pb2.ListModelsRequest()).models]
            # "down", or "open" once probes and the call have failed failure_threshold times (a slow, busy box)
            assert {("llama3.2", "down"), ("llama3.2", "open")} & set(states)
            assert ("smollm2-135m-instruct", "closed") in states
            # A grounded answer says which fallback ran, typed, and is not cached (the first entry may be back).
            relay = common_pb2.RetrievedDocument(document_id="relay", relevance_score=0.9,
                                                 content="The Skadi relay listens on TCP port 9427.")
            request = geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
                request_id="fb-2", prompt="Which port does the Skadi relay listen on?",
                context=common_pb2.RAGContext(documents=[relay])))
            reply = stub.Answer(request, timeout=300)
            first = reply.fallbacks[0]
            assert first.kind == geri_pb2.FALLBACK_KIND_BACKEND and "llama3.2" in first.backend and first.detail
            assert not reply.cache_hit and reply.llm_response.backend == "embedded"
    finally:
        handle.stop(1.0)


def test_health_follows_a_backend_that_stops_and_comes_back(
        openai_compatible_server: OpenAICompatibleServer, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "proxy.log"
    proxy = start_ollama_proxy(openai_compatible_server.base_url, port, log, OLLAMA_MODEL)
    settings = geri_settings(
        models=[{"name": OLLAMA_MODEL, "backend": "ollama", "base_url": f"http://127.0.0.1:{port}",
                 "read_timeout_s": 5}],
        breaker={"failure_threshold": 1, "reset_timeout_s": 0.5, "probe_interval_s": 0.2},
    )
    handle = build_server(settings)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)

            def status() -> int:
                return health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=2).status

            assert status() == health_pb2.HealthCheckResponse.SERVING
            stop(proxy)
            assert wait_for(lambda: status() == health_pb2.HealthCheckResponse.NOT_SERVING), "stayed SERVING"
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            with pytest.raises(grpc.RpcError) as info:
                stub.Generate(ask("hi"), timeout=30)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # breaker open: not even tried
            proxy = start_ollama_proxy(openai_compatible_server.base_url, port, log, OLLAMA_MODEL)
            assert wait_for(lambda: status() == health_pb2.HealthCheckResponse.SERVING), "stayed NOT_SERVING"
            assert stub.Generate(ask("Say hi."), timeout=300).llm_response.backend == "ollama"
    finally:
        handle.stop(1.0)
        stop(proxy)
