"""Geri's operations on a real Geri (embedded SmolLM2): tokens in metrics, generation audit, API keys."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401
from tests.wolf_service.conftest import KEYS, api_keys, bearer, metrics_url
from tests.wolf_service.test_metrics import scrape, value
from wolf_service.audit_log import read_audit_log

pytestmark = pytest.mark.integration

PROMPT = "Name the port the Geri service uses."


def generate_request(request_id: str, tenant: str = "") -> common_pb2.WolfRequest:
    return common_pb2.WolfRequest(
        request_id=request_id, model_type=common_pb2.LLM, prompt=PROMPT, tenant_id=tenant,
        metadata=common_pb2.RequestMetadata(max_tokens=8, temperature=0.0),
        context=common_pb2.RAGContext(documents=[common_pb2.RetrievedDocument(
            document_id="ops", content="The Geri service listens on TCP port 50052.", relevance_score=0.9)]),
    )


def test_geri_metrics_audit_and_keys(embedded_backend, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    audit = tmp_path / "geri-audit.jsonl"
    settings = geri_settings(metrics={"port": 0}, audit_log=audit, security={"api_keys": api_keys()})
    with start_geri(settings, embedded_backend) as handle, grpc.insecure_channel(handle.address) as channel:
        stub = geri_pb2_grpc.GeriServiceStub(channel)
        url = metrics_url(handle)
        with pytest.raises(grpc.RpcError) as err:
            stub.Generate(generate_request("g-anon"))
        assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as err:
            stub.Generate(generate_request("g-other", tenant="acme"), metadata=bearer("globex"))
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # ListModels has no tenant: any valid key may call it.
        assert stub.ListModels(geri_pb2.ListModelsRequest(), metadata=bearer("globex")).models

        reply = stub.Generate(generate_request("g-ok"), metadata=bearer("acme"))
        events = list(stub.GenerateStream(generate_request("g-stream"), metadata=bearer("acme")))
        final = events[-1].final.llm_response
        assert reply.llm_response.completion_tokens > 0 and final.completion_tokens > 0
        samples = scrape(url)

    model = reply.llm_response.model_used
    assert value(samples, "geri_tokens_generated_total", model=model) == (
        reply.llm_response.completion_tokens + final.completion_tokens)
    assert value(samples, "geri_prompt_tokens_total", model=model) == (
        reply.llm_response.prompt_tokens + final.prompt_tokens)
    for method in ("GeriService/Generate", "GeriService/GenerateStream"):
        assert value(samples, "wolf_rpc_requests_total", service="geri", method=method, code="OK") == 1
    assert value(samples, "wolf_rpc_requests_total", service="geri", method="GeriService/Generate",
                 code="UNAUTHENTICATED") == 1
    assert value(samples, "geri_active_generations", backend=embedded_backend.kind) == 0
    assert value(samples, "geri_backend_precision_fallbacks_total", backend=embedded_backend.kind) == 0

    events_by_id = {e["request_id"]: e for e in read_audit_log(audit)}
    assert events_by_id["g-anon"]["outcome"] == "unauthenticated"
    assert events_by_id["g-other"]["outcome"] == "permission_denied"
    assert events_by_id["g-other"]["actor"] == "globex-ci" and events_by_id["g-other"]["tenant"] == "acme"
    ok = events_by_id["g-ok"]
    assert (ok["action"], ok["outcome"], ok["actor"], ok["tenant"]) == ("geri.generate", "ok", "acme-ci", "acme")
    assert ok["completion_tokens"] == reply.llm_response.completion_tokens and ok["model"] == model
    stream = events_by_id["g-stream"]
    assert stream["action"] == "geri.generate_stream" and stream["messages"] == len(events)
    text = audit.read_text()
    assert PROMPT not in text and "50052" not in text and KEYS["acme"] not in text


def test_a_key_reaches_only_its_own_tenants_conversations_through_answer_and_rewrite(  # type: ignore[no-untyped-def]
        embedded_backend, tmp_path: Path) -> None:  # noqa: F811
    """The tenant of Answer and RewriteQuery is in their nested WolfRequest: it is pinned to the key's like
    Generate's (no generation needed: a context below min_score abstains, a question without history is kept)."""
    def answer(tenant: str = "") -> geri_pb2.AnswerRequest:
        return geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
            request_id="a", prompt="What is the secret plan?", tenant_id=tenant,
            metadata=common_pb2.RequestMetadata(session_id="shared"),
            context=common_pb2.RAGContext(documents=[common_pb2.RetrievedDocument(
                document_id="d", content="The plan is secret.", relevance_score=0.1)])))

    def rewrite(tenant: str = "") -> geri_pb2.RewriteQueryRequest:
        return geri_pb2.RewriteQueryRequest(request=common_pb2.WolfRequest(
            request_id="r", prompt="and when?", tenant_id=tenant,
            metadata=common_pb2.RequestMetadata(session_id="shared")))

    audit = tmp_path / "audit.jsonl"
    settings = geri_settings(security={"api_keys": api_keys()}, audit_log=audit)
    with start_geri(settings, embedded_backend) as handle, grpc.insecure_channel(handle.address) as channel:
        stub = geri_pb2_grpc.GeriServiceStub(channel)
        assert not stub.Answer(answer(), metadata=bearer("acme")).answer.answered  # stored in acme's "shared"
        for call, request in ((stub.Answer, answer("acme")), (stub.RewriteQuery, rewrite("acme")),
                              (lambda r, metadata: list(stub.AnswerStream(r, metadata=metadata)), answer("acme"))):
            with pytest.raises(grpc.RpcError) as refused:
                call(request, metadata=bearer("globex"))
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "cannot act on tenant 'acme'" in refused.value.details()
        with pytest.raises(grpc.RpcError) as anonymous:
            stub.RewriteQuery(rewrite(), timeout=60)
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # globex's own "shared" is another conversation: no history, nothing to rewrite from acme's.
        kept = stub.RewriteQuery(rewrite(), metadata=bearer("globex"))
        assert (kept.query, kept.rewritten) == ("and when?", False)
        stub.Answer(answer(), metadata=bearer("globex"))
        acme = stub.GetSession(geri_pb2.SessionRequest(request_id="s", session_id="shared"), metadata=bearer("acme"))
        assert acme.tenant_id == "acme" and len(acme.turns) == 2
    first, refused = list(read_audit_log(audit))[:2]
    assert (first["action"], first["tenant"], first["request_id"], first["answered"]) == ("geri.answer", "acme", "a",
                                                                                          False)
    assert (refused["outcome"], refused["tenant"], refused["actor"]) == ("permission_denied", "acme", "globex-ci")
