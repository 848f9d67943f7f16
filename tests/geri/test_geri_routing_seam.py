"""Fallback, breakers, repair and sessions through the real gRPC service, with replaying backends at the
``Backend`` seam (real-model and real-server versions: test_geri_structured.py, test_geri_openai.py,
test_geri_fallback.py)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence

import grpc
import pytest
from pydantic import ValidationError
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.base import BackendStats, ChatMessage, Completion, Delta, GenerationParams, ModelDescription
from geri.breaker import CircuitBreaker
from geri.generation import GenerationPipeline
from geri.routing import Route, Router
from geri.server import build_server
from geri.sessions import MemorySessionStore
from geri.settings import GeriSettings, ModelRoute
from tests.geri.geri_servers_support import geri_settings
from wolf_service.errors import FailedPrecondition, Unavailable

SCHEMA = {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}},
          "additionalProperties": False}


class ReplayBackend:
    """Each generate() call takes the next outcome: an exception, or the chunks of a reply."""

    native_tools = False

    def __init__(self, name: str, outcomes: Sequence[Exception | list[str]], kind: str = "embedded") -> None:
        self.kind = kind
        self.name = name
        self.outcomes = list(outcomes)
        self.calls: list[list[ChatMessage]] = []
        self.params: list[GenerationParams] = []
        self.stats = BackendStats()

    @property
    def default_model(self) -> str:
        return self.name

    def prepare(self) -> None:
        return None

    def probe(self) -> None:
        return None

    def resolve_model(self, requested: str) -> str:
        return requested or self.name

    def context_window(self, model: str) -> int:
        return 4096

    def count_tokens(self, messages: Sequence[ChatMessage], model: str) -> int:
        return sum(len(m.content.split()) + 1 for m in messages)

    def generate(self, messages: Sequence[ChatMessage], params: GenerationParams, model: str,
                 cancel: threading.Event) -> Iterator[Delta | Completion]:
        self.calls.append(list(messages))
        self.params.append(params)
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, Exception):
            raise outcome
        for chunk in outcome:
            if chunk == "!fail":
                raise Unavailable(f"{self.name} dropped the connection mid-stream")
            yield Delta(text=chunk)
        yield Completion("stop", 3, len(outcome), model)

    def list_models(self) -> list[ModelDescription]:
        return [ModelDescription(self.name, self.kind)]

    def close(self) -> None:
        return None


def router_of(*backends: ReplayBackend, threshold: int = 2) -> Router:
    return Router([Route(ModelRoute(name=b.name, backend="embedded"), b,  # type: ignore[arg-type]
                         CircuitBreaker(threshold, 60.0), i) for i, b in enumerate(backends)], probe_interval_s=60)


@contextlib.contextmanager
def serving(router: Router, settings: GeriSettings | None = None) -> Iterator[geri_pb2_grpc.GeriServiceStub]:
    settings = settings or geri_settings()
    handle = build_server(settings, router=router)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            yield geri_pb2_grpc.GeriServiceStub(channel)
    finally:
        handle.stop(1.0)


def ask(prompt: str = "Which port?", *, session: str = "", owner: str = "", tenant: str = "",
        **generation: object) -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id="r-1", model_type=common_pb2.LLM, prompt=prompt, tenant_id=tenant,
        metadata=common_pb2.RequestMetadata(session_id=session, owner_id=owner),
        generation=common_pb2.GenerationOptions(**generation),  # type: ignore[arg-type]
    )


def test_a_failing_backend_hands_the_request_to_the_next_and_its_breaker_opens() -> None:
    down = ReplayBackend("first", [Unavailable("first is down")])
    spare = ReplayBackend("second", [["Port 50051."]])
    with serving(router_of(down, spare, threshold=2)) as stub:
        for _ in range(3):
            llm = stub.Generate(ask(), timeout=10).llm_response
            assert (llm.text, llm.model_used) == ("Port 50051.", "second")
        assert len(down.calls) == 2  # the third request skipped it: breaker open
        states = {m.name: m.state for m in stub.ListModels(geri_pb2.ListModelsRequest(), timeout=10).models}
        assert states == {"first": "open", "second": "closed"}


def test_when_every_backend_fails_the_error_names_each() -> None:
    a = ReplayBackend("a", [Unavailable("a is down")])
    b = ReplayBackend("b", [FailedPrecondition("model b is not available")])
    with serving(router_of(a, b)) as stub, pytest.raises(grpc.RpcError) as info:
        stub.Generate(ask(), timeout=10)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "a is down" in info.value.details() and "model b is not available" in info.value.details()


def test_no_fallback_once_text_reached_the_client() -> None:
    flaky = ReplayBackend("flaky", [["Port ", "!fail"]])
    spare = ReplayBackend("spare", [["never used"]])
    with serving(router_of(flaky, spare)) as stub, pytest.raises(grpc.RpcError) as info:
        list(stub.GenerateStream(ask(), timeout=10))
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE and "mid-stream" in info.value.details()
    assert spare.calls == []


def test_an_invalid_reply_gets_one_repair_with_the_reason_then_falls_back() -> None:
    sloppy = ReplayBackend("sloppy", [["The port is 50051."], ['{"port": 50051}']])
    with serving(router_of(sloppy)) as stub:
        llm = stub.Generate(ask(json_schema=json.dumps(SCHEMA)), timeout=10).llm_response
    assert (llm.json, llm.repair_attempts) == ('{"port":50051}', 1)
    repair = sloppy.calls[1][-1]
    assert repair.role == "user" and "not JSON" in repair.content and '"port"' in repair.content
    assert sloppy.params[0].json_schema == SCHEMA  # the backend was asked to constrain its decoding

    hopeless = ReplayBackend("hopeless", [['{"port": "fifty"}']])
    good = ReplayBackend("good", [['{"port": 1}']])
    with serving(router_of(hopeless, good)) as stub:
        llm = stub.Generate(ask(json_schema=json.dumps(SCHEMA)), timeout=10).llm_response
    assert (llm.json, llm.model_used) == ('{"port":1}', "good")
    assert len(hopeless.calls) == 2  # tried, repaired once, then handed on


def test_a_reply_that_stays_invalid_is_failed_precondition_never_passed_on() -> None:
    garbage = ReplayBackend("garbage", [["<html>oops</html>"]])
    with serving(router_of(garbage)) as stub:
        with pytest.raises(grpc.RpcError) as info:
            stub.Generate(ask(json_schema=json.dumps(SCHEMA)), timeout=10)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "did not produce a valid reply after 1 repair attempt" in info.value.details()
        events = list(stub.GenerateStream(ask("free text is streamed"), timeout=10))
        assert [e.WhichOneof("event") for e in events] == ["text_delta", "final"]


def test_structured_replies_are_not_streamed_before_they_are_checked() -> None:
    backend = ReplayBackend("b", [['{"port":', ' 7}']])
    with serving(router_of(backend)) as stub:
        events = list(stub.GenerateStream(ask(json_schema=json.dumps(SCHEMA)), timeout=10))
    assert [e.WhichOneof("event") for e in events] == ["final"]
    assert events[0].final.llm_response.json == '{"port":7}'


def test_a_session_carries_history_and_stays_within_its_tenant() -> None:
    backend = ReplayBackend("b", [["It listens on 50051."], ["About 2 ms."], ["fresh"]])
    with serving(router_of(backend)) as stub:
        stub.Generate(ask("Which port does Geri use?", session="s1", owner="alice", tenant="acme"), timeout=10)
        stub.Generate(ask("and how fast is it?", session="s1", owner="alice", tenant="acme"), timeout=10)
        second = [(m.role, m.content) for m in backend.calls[1]]
        assert ("user", "Which port does Geri use?") in second and ("assistant", "It listens on 50051.") in second
        assert second[-1] == ("user", "and how fast is it?")
        # Same session id in another tenant: nothing of acme's history.
        stub.Generate(ask("hello", session="s1", tenant="other"), timeout=10)
        assert all("50051" not in m.content for m in backend.calls[2])
        session = stub.GetSession(geri_pb2.SessionRequest(request_id="g", tenant_id="acme", session_id="s1"))
        assert [t.role for t in session.turns] == ["user", "assistant", "user", "assistant"]
        assert session.owner_id == "alice"
        with pytest.raises(grpc.RpcError) as info:
            stub.Generate(ask("show me", session="s1", owner="mallory", tenant="acme"), timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        erased = stub.DeleteOwnerSessions(geri_pb2.DeleteOwnerSessionsRequest(
            request_id="e", tenant_id="acme", owner_id="alice"), timeout=10)
        assert erased.sessions_deleted == 1
        with pytest.raises(grpc.RpcError) as info:
            stub.GetSession(geri_pb2.SessionRequest(request_id="g2", tenant_id="acme", session_id="s1"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        deleted = stub.DeleteSession(geri_pb2.SessionRequest(request_id="d", tenant_id="other", session_id="s1"))
        assert deleted.deleted and not stub.DeleteSession(
            geri_pb2.SessionRequest(request_id="d2", tenant_id="other", session_id="s1")).deleted


def test_history_is_limited_by_its_token_budget() -> None:
    backend = ReplayBackend("b", [["ok"]])
    settings = geri_settings(sessions={"history_tokens": 12})
    with serving(router_of(backend), settings) as stub:
        for i in range(4):
            stub.Generate(ask(f"question number {i} with several words", session="s"), timeout=10)
    last = backend.calls[-1]
    history = [m for m in last[1:-1]]  # between the system prompt and the new question
    assert 0 < sum(backend.count_tokens([m], "b") for m in history) <= 12
    assert "question number 0" not in " ".join(m.content for m in history)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("json_schema", '{"type": "strin"}', "generation.json_schema is not a valid JSON Schema"),
    ("tool_choice", "sometimes", "generation.tool_choice must be one of"),
    ("tools", [common_pb2.ToolDefinition(name="bad name")], "generation.tools[0].name must match"),
    ("messages", [common_pb2.ChatTurn(role="tool", content="42")], "tool_call_id must name the call"),
    ("messages", [common_pb2.ChatTurn(role="root", content="x")], "role must be one of"),
])
def test_bad_contracts_are_invalid_argument(field: str, value: object, message: str) -> None:
    backend = ReplayBackend("b", [["ok"]])
    with serving(router_of(backend)) as stub, pytest.raises(grpc.RpcError) as info:
        stub.Generate(ask(**{field: value}), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and message in info.value.details()
    assert backend.calls == []


def test_with_every_breaker_open_the_request_is_unavailable_without_trying() -> None:
    down = ReplayBackend("only", [Unavailable("only is down")])
    with serving(router_of(down, threshold=1)) as stub:
        with pytest.raises(grpc.RpcError) as first:
            stub.Generate(ask(), timeout=10)
        assert first.value.details() == "only is down"  # a lone backend's own error, unchanged
        with pytest.raises(grpc.RpcError) as info:
            stub.Generate(ask(), timeout=10)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE and "circuit breaker open" in info.value.details()
    assert len(down.calls) == 1


def test_geri_enforces_api_key_scopes_per_rpc() -> None:
    from wolf_service.auth import hash_key

    keys = [{"name": "chat-app", "tenant": "acme", "sha256": hash_key("k-read"), "scopes": ["read"]},
            {"name": "dpo", "tenant": "acme", "sha256": hash_key("k-del"), "scopes": ["delete"]}]
    backend = ReplayBackend("b", [["ok"]])
    with serving(router_of(backend), geri_settings(security={"api_keys": keys})) as stub:
        reader, dpo = (("authorization", "Bearer k-read"),), (("authorization", "Bearer k-del"),)
        stub.Generate(ask("hi", session="s", owner="alice"), metadata=reader, timeout=10)
        erase = geri_pb2.DeleteOwnerSessionsRequest(request_id="e", owner_id="alice")
        with pytest.raises(grpc.RpcError) as info:
            stub.DeleteOwnerSessions(erase, metadata=reader, timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED and "lacks scope 'delete'" in info.value.details()
        with pytest.raises(grpc.RpcError) as info:
            stub.Generate(ask("hi"), metadata=dpo, timeout=10)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # The key pins the tenant: the session created with the reader key lives in acme.
        assert stub.DeleteOwnerSessions(erase, metadata=dpo, timeout=10).sessions_deleted == 1


def test_a_reply_that_used_every_token_is_cut_off_even_when_the_server_says_stop() -> None:
    """An Ollama proxy in front of llama.cpp reports "stop" for a reply cut at max_tokens: Geri counts the
    tokens, says it was cut off (and how to fix it) and does not waste a repair on half a JSON object."""
    cut = ReplayBackend("cut", [['{"answer": "po', 'rt 9', '427 and']])
    request = ask(json_schema=json.dumps(SCHEMA))
    request.metadata.max_tokens = 3
    with serving(router_of(cut)) as stub:
        with pytest.raises(grpc.RpcError) as info:
            stub.Generate(request, timeout=10)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "was cut off at max_tokens=3" in info.value.details() and len(cut.calls) == 1


class ScoringReplay(ReplayBackend):
    """A replaying backend that can also score continuations (as the embedded one does)."""

    def score_continuations(self, prompt: str, continuations: Sequence[str], shared_prefix: str = "",
                            cancel: object = None) -> list[list[float]]:
        return [[-1.0] for _ in continuations]


def test_the_answer_reranker_scores_with_the_first_entry_only_when_it_can_score_and_its_breaker_is_closed() -> None:
    settings = geri_settings()
    scoring, plain = ScoringReplay("s", [["ok"]]), ReplayBackend("p", [["ok"]])
    router = router_of(scoring, plain, threshold=1)
    pipeline = GenerationPipeline(settings, router, MemorySessionStore(settings.sessions))
    assert pipeline.first_scorer("") is scoring
    assert pipeline.first_scorer("p") is None  # the named entry cannot score
    router.routes[0].breaker.failure()
    assert pipeline.first_scorer("") is None
    only_plain = GenerationPipeline(settings, router_of(plain), MemorySessionStore(settings.sessions))
    assert only_plain.first_scorer("") is None


def test_the_scoring_model_is_the_named_entry_that_scores_while_its_breaker_is_closed() -> None:
    remote, beside = ReplayBackend("remote", [["x"]], kind="ollama"), ScoringReplay("smol", [["x"]])
    router = router_of(remote, beside, threshold=1)
    settings = geri_settings()
    generation = GenerationPipeline(settings, router, MemorySessionStore(settings.sessions))
    assert generation.first_scorer("") is None  # the backend that answers first cannot score
    assert generation.named_scorer("smol") is beside
    assert generation.named_scorer("remote") is None and generation.named_scorer("") is None
    router.failed(router.routes[1], Unavailable("smol is down"))
    assert generation.named_scorer("smol") is None  # an open breaker: the rules decide
    with pytest.raises(ValidationError, match="answering.scoring_model 'remote' must be the name of an embedded"):
        GeriSettings(models=[{"name": "remote", "backend": "ollama"}], answering={"scoring_model": "remote"})
