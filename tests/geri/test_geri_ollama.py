"""Integration: Geri's Ollama backend against a real third-party Ollama-protocol server
(ollama-proxy-plus in front of ``transformers serve`` running SmolLM2), through Geri's gRPC API."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.base import ChatMessage, GenerationParams
from geri.backends.embedded import EmbeddedBackend
from geri.backends.ollama import OllamaBackend
from geri.breaker import CircuitBreaker
from geri.routing import Route, Router
from geri.server import build_server
from tests.geri.geri_servers_support import OllamaProtocolServer, free_port, geri_settings, start_geri
from wolf_service.errors import DeadlineExceeded
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration

PORT_DOC = common_pb2.RetrievedDocument(
    document_id="geri-networking", content="The Geri service listens on TCP port 50051.", relevance_score=0.9
)


def ask(prompt: str, *, max_tokens: int, model: str = "", docs: list[common_pb2.RetrievedDocument] | None = None
        ) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id="ollama-1",
        model_type=common_pb2.LLM,
        prompt=prompt,
        context=common_pb2.RAGContext(documents=docs or []),
        metadata=common_pb2.RequestMetadata(max_tokens=max_tokens, temperature=0.0),
        generation=common_pb2.GenerationOptions(model=model),
    )


@pytest.fixture(scope="module")
def ollama_backend(ollama_protocol_server: OllamaProtocolServer) -> Iterator[OllamaBackend]:
    backend = OllamaBackend(
        geri_settings(
            backend="ollama", ollama_host=ollama_protocol_server.host, ollama_model=ollama_protocol_server.model
        )
    )
    backend.prepare()
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="module")
def ollama_geri(ollama_backend: OllamaBackend) -> Iterator[tuple[ServerHandle, geri_pb2_grpc.GeriServiceStub]]:
    with start_geri(geri_settings(backend="ollama"), ollama_backend) as handle, \
            grpc.insecure_channel(handle.address) as channel:
        yield handle, geri_pb2_grpc.GeriServiceStub(channel)


def test_generate_answers_from_context(
    ollama_geri: tuple[ServerHandle, geri_pb2_grpc.GeriServiceStub], ollama_protocol_server: OllamaProtocolServer
) -> None:
    _, stub = ollama_geri
    response = stub.Generate(ask("Which TCP port does Geri listen on?", max_tokens=24, docs=[PORT_DOC]),
                             timeout=300)
    llm = response.llm_response
    assert "50051" in llm.text
    assert llm.model_used == ollama_protocol_server.model
    assert llm.completion_tokens > 0 and llm.prompt_tokens > 0
    assert llm.tokens_used == llm.prompt_tokens + llm.completion_tokens
    assert llm.finish_reason in ("stop", "length") and llm.latency_ms > 0
    assert response.metadata.timestamp.seconds > 0


def test_stream_yields_deltas_then_final(ollama_geri: tuple[ServerHandle, geri_pb2_grpc.GeriServiceStub]) -> None:
    _, stub = ollama_geri
    events = list(stub.GenerateStream(ask("Name three colours.", max_tokens=16), timeout=300))
    deltas = [e.text_delta for e in events if e.WhichOneof("event") == "text_delta"]
    assert len(deltas) > 1
    assert events[-1].WhichOneof("event") == "final"
    assert "".join(deltas) == events[-1].final.llm_response.text != ""


def test_list_models_includes_the_served_model(
    ollama_geri: tuple[ServerHandle, geri_pb2_grpc.GeriServiceStub], ollama_protocol_server: OllamaProtocolServer
) -> None:
    _, stub = ollama_geri
    listing = stub.ListModels(geri_pb2.ListModelsRequest(), timeout=30)
    assert listing.default_model == ollama_protocol_server.model
    served = [m for m in listing.models if m.name == ollama_protocol_server.model]
    assert served and served[0].backend == "ollama"


def test_missing_model_is_failed_precondition_with_pull_hint(
    ollama_geri: tuple[ServerHandle, geri_pb2_grpc.GeriServiceStub]
) -> None:
    _, stub = ollama_geri
    with pytest.raises(grpc.RpcError) as info:
        stub.Generate(ask("Hi", max_tokens=4, model="nosuch/model-7b"), timeout=60)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "nosuch/model-7b" in info.value.details() and "ollama pull nosuch/model-7b" in info.value.details()


def test_unreachable_ollama_is_unavailable_and_listed_as_down() -> None:
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    backend = OllamaBackend(geri_settings(backend="ollama", ollama_host=dead, ollama_model="local/smollm2"))
    backend.prepare()  # must not fail startup: Ollama may come up later
    try:
        with start_geri(geri_settings(backend="ollama"), backend) as handle, \
                grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            with pytest.raises(grpc.RpcError) as info:
                stub.Generate(ask("Hi", max_tokens=4), timeout=30)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert dead in info.value.details()
            # The model list still shows the configured model, and says its backend is down.
            listed = stub.ListModels(geri_pb2.ListModelsRequest(), timeout=30).models
            assert [(m.name, m.backend, m.state) for m in listed] == [("local/smollm2", "ollama", "down")]
    finally:
        backend.close()


def test_slow_server_is_deadline_exceeded(ollama_protocol_server: OllamaProtocolServer) -> None:
    settings = geri_settings(
        backend="ollama",
        ollama_host=ollama_protocol_server.host,
        ollama_model=ollama_protocol_server.model,
        ollama_read_timeout_s=0.001,  # no model answers within a millisecond
    )
    backend = OllamaBackend(settings)
    try:
        with pytest.raises(DeadlineExceeded, match="GERI_OLLAMA_READ_TIMEOUT_S"):
            list(backend.generate([ChatMessage("user", "Hi")], GenerationParams(max_tokens=8, temperature=0),
                                  ollama_protocol_server.model, threading.Event()))
    finally:
        backend.close()


def test_cancelled_stream_closes_the_ollama_stream(
    ollama_geri: tuple[ServerHandle, geri_pb2_grpc.GeriServiceStub], ollama_backend: OllamaBackend
) -> None:
    _, stub = ollama_geri
    before = ollama_backend.stats.tokens_generated
    call = stub.GenerateStream(ask("Write a very long story about a wolf.", max_tokens=1000), timeout=600)
    for event in call:
        if event.WhichOneof("event") == "text_delta":
            call.cancel()
            break
    deadline = time.monotonic() + 20
    while ollama_backend.stats.active_generations and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ollama_backend.stats.active_generations == 0, "the Ollama stream was not closed after the cancel"
    assert ollama_backend.stats.tokens_generated - before < 200


def test_the_embedded_model_beside_ollama_reranks_its_sources_as_scoring_model(
        ollama_backend: OllamaBackend, embedded_backend: EmbeddedBackend, ollama_protocol_server: OllamaProtocolServer,
) -> None:
    # Freki put Boston first; it does not say what is asked (min_evidence), Quebec does once it is moved first.
    quebec = common_pb2.RetrievedDocument(document_id="quebec", relevance_score=0.44, content=(
        "The British were defeated outside Quebec City in April 1760 at the Battle of Sainte-Foy, but the French "
        "could not retake the city."))
    boston = common_pb2.RetrievedDocument(document_id="boston", relevance_score=0.45, content=(
        "The British army lost many soldiers at the Battle of Bunker Hill near Boston in 1775, although they took "
        "the hill."))
    question = ask("In what battle outside Quebec City were the British defeated in 1760?", max_tokens=200,
                   docs=[boston, quebec])
    models = [{"name": ollama_protocol_server.model, "backend": "ollama", "base_url": ollama_protocol_server.host},
              {"name": "smollm2-135m-instruct", "backend": "embedded"}]
    for scoring_model in ("smollm2-135m-instruct", ""):
        settings = geri_settings(models=models, answering={"scoring_model": scoring_model})
        router = Router([Route(settings.routes()[i], backend, CircuitBreaker(3, 30.0), i)
                         for i, backend in enumerate((ollama_backend, embedded_backend))], 60.0, owns_backends=False)
        handle = build_server(settings, router=router)
        try:
            with grpc.insecure_channel(handle.address) as channel:
                reply = geri_pb2_grpc.GeriServiceStub(channel).Answer(geri_pb2.AnswerRequest(request=question),
                                                                      timeout=600)
        finally:
            handle.stop(1.0)
        if scoring_model:  # reranked, Quebec passes the gate and the model list is asked (Ollama first)
            assert "min_evidence" not in reply.answer.reason and reply.HasField("llm_response")
            assert reply.llm_response.backend == "ollama" or "ollama" in reply.fallbacks[0].backend
        else:  # Ollama cannot score: Freki's order, and Boston is held to min_evidence without a generation
            assert "below min_evidence" in reply.answer.reason and not reply.HasField("llm_response")
