"""Service tests with a scripted backend at the ``Backend`` seam (the real-model tests are in
``test_geri_embedded.py`` / ``test_geri_ollama.py``): reasoning split across stream chunks, error
mapping, and that a client's cancel reaches the backend's cancel event."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import grpc
import pytest
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.base import (
    BackendStats,
    ChatMessage,
    Completion,
    Delta,
    GenerationParams,
    ModelDescription,
)
from tests.geri.geri_servers_support import geri_settings, start_geri
from wolf_service.errors import DeadlineExceeded, FailedPrecondition, Unavailable


class ScriptedBackend:
    """Replays fixed chunks; optionally fails or blocks until cancelled."""

    kind = "scripted"
    native_tools = False

    def __init__(self, chunks: Sequence[str] = (), error: Exception | None = None, block: bool = False) -> None:
        self.chunks = list(chunks)
        self.error = error
        self.block = block
        self.stats = BackendStats()
        self.stopped = threading.Event()  # the generate() call has ended, however it ended
        self.cancel: threading.Event | None = None
        self.started = threading.Event()
        self.messages: list[ChatMessage] = []
        self.scopes: list[str] = []  # whose cached prompts each call may reuse
        self.schemas: list[dict[str, Any] | None] = []  # the JSON schema each call was constrained to

    @property
    def default_model(self) -> str:
        return "scripted-1"

    def prepare(self) -> None:
        return None

    def probe(self) -> None:
        return None

    def resolve_model(self, requested: str) -> str:
        if requested == "missing":
            raise FailedPrecondition("model 'missing' is not available: pull it with `ollama pull missing`")
        return requested or self.default_model

    def context_window(self, model: str) -> int:
        return 4096

    def count_tokens(self, messages: Sequence[ChatMessage], model: str) -> int:
        return sum(len(m.content.split()) for m in messages)

    def generate(
        self, messages: Sequence[ChatMessage], params: GenerationParams, model: str, cancel: threading.Event
    ) -> Iterator[Delta | Completion]:
        self.messages = list(messages)
        self.scopes.append(params.cache_scope)
        self.schemas.append(params.json_schema)
        self.cancel = cancel
        self.started.set()
        try:
            if self.error is not None:
                raise self.error
            for chunk in self.chunks:
                yield Delta(text=chunk)
            if self.block:
                yield Delta(text="waiting")
                if cancel.wait(30):
                    yield Completion("cancelled", 5, 1, model)
                    return
            yield Completion("stop", 0, len(self.chunks), model)
        finally:
            self.stopped.set()

    def list_models(self) -> list[ModelDescription]:
        return [ModelDescription("scripted-1", self.kind, 1, 4096, "test")]

    def close(self) -> None:
        return None


def request(**generation: object) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id="seam-1",
        model_type=common_pb2.LLM,
        prompt="Which port?",
        context=common_pb2.RAGContext(
            documents=[common_pb2.RetrievedDocument(document_id="d1", content="Port 50051.", relevance_score=1)]
        ),
        generation=common_pb2.GenerationOptions(**generation),  # type: ignore[arg-type]
    )


@contextlib.contextmanager
def stub_for(backend: ScriptedBackend) -> Iterator[geri_pb2_grpc.GeriServiceStub]:
    with start_geri(geri_settings(), backend) as handle, grpc.insecure_channel(handle.address) as channel:
        yield geri_pb2_grpc.GeriServiceStub(channel)


REASONING_CHUNKS = ["<thi", "nk>The doc says", " 50051.</th", "ink>\n\nPort ", "50051."]


def test_thinking_split_across_chunks_is_streamed_separately() -> None:
    with stub_for(ScriptedBackend(REASONING_CHUNKS)) as stub:
        events = list(stub.GenerateStream(request(), timeout=10))
        thinking = "".join(e.thinking_delta for e in events if e.WhichOneof("event") == "thinking_delta")
        text = "".join(e.text_delta for e in events if e.WhichOneof("event") == "text_delta")
        final = events[-1].final.llm_response
        assert thinking == "The doc says 50051." == final.thinking
        assert text == "Port 50051." == final.text
        assert "<think>" not in text and "</think>" not in text
        unary = stub.Generate(request(), timeout=10).llm_response
        assert (unary.text, unary.thinking) == (final.text, final.thinking)


def test_usage_falls_back_to_geri_count_when_backend_reports_no_prompt_tokens() -> None:
    backend = ScriptedBackend(["a", "b"])
    with stub_for(backend) as stub:
        llm = stub.Generate(request(), timeout=10).llm_response
        assert llm.prompt_tokens == backend.count_tokens(backend.messages, "scripted-1") > 0
        assert llm.completion_tokens == 2 and llm.tokens_used == llm.prompt_tokens + 2
        assert llm.model_used == "scripted-1"


def test_prompt_reaches_backend_with_document_blocks() -> None:
    backend = ScriptedBackend(["ok"])
    with stub_for(backend) as stub:
        stub.Generate(request(system_prompt="Custom rules."), timeout=10)
    assert backend.messages[0] == ChatMessage("system", "Custom rules.")
    assert "[Document 1: d1]\nPort 50051." in backend.messages[1].content
    assert backend.messages[1].content.endswith("Question: Which port?")


def test_prompt_cache_scopes_keep_users_and_tenants_apart() -> None:
    # How fast a prompt starts must not tell one user what another of the tenant asked.
    backend = ScriptedBackend(["ok"])
    with stub_for(backend) as stub:
        for tenant, user in (("acme", "ann"), ("acme", "bob"), ("acme", "ann"), ("globex", "ann"), ("acme", "")):
            wolf = request()
            wolf.tenant_id = tenant
            stub.Generate(wolf, timeout=10, metadata=(("x-wolf-user", user),) if user else None)
    ann, bob, ann_again, other_tenant, nobody = backend.scopes
    assert ann == ann_again and len({ann, bob, other_tenant, nobody}) == 4


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (Unavailable("cannot reach Ollama at http://x:1"), grpc.StatusCode.UNAVAILABLE),
        (DeadlineExceeded("Ollama did not answer within 1s"), grpc.StatusCode.DEADLINE_EXCEEDED),
        (RuntimeError("backend bug"), grpc.StatusCode.INTERNAL),
    ],
)
def test_backend_errors_map_to_status_codes(error: Exception, code: grpc.StatusCode) -> None:
    with stub_for(ScriptedBackend(error=error)) as stub:
        for streaming in (False, True):
            with pytest.raises(grpc.RpcError) as info:
                if streaming:
                    list(stub.GenerateStream(request(), timeout=10))
                else:
                    stub.Generate(request(), timeout=10)
            assert info.value.code() == code
            if code == grpc.StatusCode.INTERNAL:
                assert "seam-1" in info.value.details() and "backend bug" not in info.value.details()
            else:
                assert str(error) in info.value.details()


def test_missing_model_is_failed_precondition() -> None:
    with stub_for(ScriptedBackend(["x"])) as stub:
        with pytest.raises(grpc.RpcError) as info:
            stub.Generate(request(model="missing"), timeout=10)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "ollama pull missing" in info.value.details()


def test_client_cancel_ends_the_backend_generation_promptly() -> None:
    # The backend is suspended at a yield when the client leaves: nothing would resume it, so
    # Geri must close it (running its finally blocks) and set its cancel event.
    backend = ScriptedBackend(block=True)
    with stub_for(backend) as stub:
        call = stub.GenerateStream(request(), timeout=30)
        assert next(call).text_delta == "waiting"
        call.cancel()
        assert backend.stopped.wait(5), "the backend generation was still open 5s after the cancel"
        assert backend.cancel is not None and backend.cancel.is_set()


def test_list_models_reports_backend_models() -> None:
    with stub_for(ScriptedBackend()) as stub:
        listing = stub.ListModels(geri_pb2.ListModelsRequest(), timeout=10)
        assert listing.default_model == "scripted-1"
        assert [(m.name, m.backend, m.context_length) for m in listing.models] == [("scripted-1", "scripted", 4096)]


def test_an_answer_whose_window_drops_a_source_may_cite_only_the_sources_shown() -> None:
    reply = ('{"answered": true, "citations": [{"source": 1, "sentence": 1}], "answer": "port 50051", '
             '"summary": "s", "key_details": [], "confidence": 0.5}')
    backend = ScriptedBackend([reply])
    shown = common_pb2.RetrievedDocument(document_id="geri", relevance_score=1.0, content="Geri listens on port 50051.")
    # 40 numbered sentences of 113 words: past the scripted window of 4,096 (one token a word).
    big = common_pb2.RetrievedDocument(document_id="big", relevance_score=0.9, content=" ".join(
        f"Setting {i} is {'x ' * 110}on." for i in range(45)))
    with stub_for(backend) as stub:
        answer = stub.Answer(geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
            request_id="a", prompt="Which port does Geri listen on?",
            context=common_pb2.RAGContext(documents=[shown, big]))), timeout=30)
    assert list(answer.metadata.dropped_document_ids) == ["big"] and answer.answer.answered
    (schema,) = backend.schemas
    assert schema is not None
    cited = [c["properties"]["source"]["const"] for c in schema["properties"]["citations"]["items"]["anyOf"]]
    assert cited == [1]  # source 2 was not shown: the model may not cite it
