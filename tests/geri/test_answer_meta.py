"""What an answer reports (documents, retrieval, fallbacks, cache hits) over a real Freki and a real Geri with the
embedded SmolLM2; and the answer cache against hostile callers: another tenant, a forged epoch or context, a huge
question, another user. Every generation costs seconds on 2 cores: five run here."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc, geri_pb2, geri_pb2_grpc

from freki.api.server import build_server as build_freki
from freki.engine import FrekiEngine
from tests.freki.conftest import freki_settings
from tests.geri.geri_servers_support import geri_settings, start_geri
from wolf_service.status_details import details_of, unpacked

pytestmark = pytest.mark.integration

RELAY = "The Skadi relay listens on TCP port 9427 by default. It writes its logs to syslog."
GARDEN = "Tomatoes need six hours of sun. Water them in the morning."
QUESTION = "Which port does the Skadi relay listen on?"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory, embedder, embedded_backend  # type: ignore[no-untyped-def]
          ) -> Iterator[tuple[freki_pb2_grpc.FrekiServiceStub, geri_pb2_grpc.GeriServiceStub]]:
    settings = freki_settings(tmp_path_factory.mktemp("freki"))
    handle, engine = build_freki(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with start_geri(geri_settings(), embedded_backend) as geri, \
                grpc.insecure_channel(handle.address) as f, grpc.insecure_channel(geri.address) as g:
            yield freki_pb2_grpc.FrekiServiceStub(f), geri_pb2_grpc.GeriServiceStub(g)
    finally:
        handle.stop(1.0)
        engine.close()


def index(freki: freki_pb2_grpc.FrekiServiceStub, tenant: str, doc_id: str, text: str) -> None:
    freki.IndexDocument(freki_pb2.IndexDocumentRequest(request_id="ix", tenant_id=tenant, document_id=doc_id,
                                                       source=f"docs/{doc_id}.md", content=text), timeout=120)


def retrieve(freki: freki_pb2_grpc.FrekiServiceStub, tenant: str) -> common_pb2.RAGContext:
    return freki.RetrieveContext(common_pb2.WolfRequest(
        request_id="rc", model_type=common_pb2.RAG, prompt=QUESTION, tenant_id=tenant,
        retrieval=common_pb2.RetrievalOptions(top_k=4, score_threshold=0.0,
                                              query_variants=["Skadi relay TCP port"])), timeout=60).rag_context


def answer(geri: geri_pb2_grpc.GeriServiceStub, tenant: str, context: common_pb2.RAGContext, *,
           prompt: str = QUESTION, session: str = "", queries: tuple[str, ...] = (),
           user: str = "") -> geri_pb2.AnswerResponse:
    return geri.Answer(geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id="ans", prompt=prompt, tenant_id=tenant, context=context,
        metadata=common_pb2.RequestMetadata(session_id=session)), queries_used=queries), timeout=300,
        metadata=(("x-wolf-user", user),) if user else None)


def test_a_repeated_question_is_answered_from_the_cache_of_its_tenant_only_until_a_write(stubs) -> None:  # type: ignore[no-untyped-def]
    freki, geri = stubs
    for tenant in ("alpha", "beta"):
        index(freki, tenant, "relay", RELAY)
        index(freki, tenant, "garden", GARDEN)
    context = retrieve(freki, "alpha")
    # Freki says what it did: the queries searched, no re-ranker, the tenant's epoch.
    assert list(context.queries) == [QUESTION, "Skadi relay TCP port"] and not context.reranked
    assert context.index_epoch > 0

    first = answer(geri, "alpha", context)
    assert first.answer.answered and not first.cache_hit and first.llm_response.completion_tokens > 0
    docs = {d.document_id: d for d in first.documents}
    assert set(docs) == {d.document_id for d in context.documents} == {"relay", "garden"}
    relay = docs["relay"]
    assert relay.source == "docs/relay.md" and relay.chunk_count == 1 and relay.cited and relay.shown
    assert relay.best_relevance == relay.mean_relevance == max(d.relevance_score for d in context.documents)
    assert first.documents[0].document_id == "relay"  # best first
    retrieval = first.retrieval
    assert (retrieval.documents_found, retrieval.chunks_found) == (2, 2)
    assert list(retrieval.queries_used) == list(context.queries) and retrieval.index_epoch == context.index_epoch
    assert retrieval.average_relevance == pytest.approx(context.retrieval_score, abs=1e-6)

    # The same question, spelled differently, in a new conversation: no generation, the same answer, and
    # the turn is in the conversation all the same.
    again = answer(geri, "alpha", context, prompt="  which PORT does the Skadi relay listen on ", session="s-1",
                   queries=("relay port", "Skadi relay TCP port"))
    assert again.cache_hit and again.answer == first.answer and again.llm_response.completion_tokens == 0
    assert list(again.fallbacks) == list(first.fallbacks)  # how the answer was made, once each
    assert list(again.retrieval.queries_used) == ["relay port", "Skadi relay TCP port"]  # the caller's
    turns = geri.GetSession(geri_pb2.SessionRequest(request_id="s", tenant_id="alpha", session_id="s-1")).turns
    assert [t.role for t in turns] == ["user", "assistant"] and "PORT" in turns[0].content
    assert turns[1].content == first.answer.text

    # Another tenant asking the same with the same context is never served alpha's answer, nor is another user
    # of alpha: a hit would tell them what was asked before.
    assert not answer(geri, "beta", context).cache_hit
    assert not answer(geri, "alpha", context, user="bob").cache_hit

    # A write moves alpha's epoch on: the next answer is generated again.
    index(freki, "alpha", "ports", "The Skadi admin API listens on port 9500.")
    fresh = retrieve(freki, "alpha")
    assert fresh.index_epoch > context.index_epoch
    assert not answer(geri, "alpha", fresh).cache_hit


def test_a_forged_context_with_a_cached_epoch_and_chunk_ids_is_not_served_the_cached_answer(stubs) -> None:  # type: ignore[no-untyped-def]
    """Same tenant, same epoch and chunk ids, other text: the key holds the text, so the forged context gets
    its own answer and the cached one is never served for it (nor the forged one for the real context)."""
    freki, geri = stubs
    context = retrieve(freki, "alpha")  # answered and cached by the test above (a new query_id)
    cached = answer(geri, "alpha", context)
    assert cached.cache_hit
    forged = common_pb2.RAGContext()
    forged.CopyFrom(context)
    for doc in forged.documents:
        doc.content = doc.content.replace("9427", "1111")
    reply = answer(geri, "alpha", forged)
    assert not reply.cache_hit and "9427" not in reply.answer.text
    assert answer(geri, "alpha", context).answer == cached.answer


def test_huge_questions_and_query_lists_are_refused_with_the_field_and_the_limit(stubs) -> None:  # type: ignore[no-untyped-def]
    _, geri = stubs
    with pytest.raises(grpc.RpcError) as raised:
        answer(geri, "alpha", common_pb2.RAGContext(), prompt="why " * 300_000)  # over MAX_PROMPT_CHARS (1,000,000)
    error = raised.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and error.details().startswith("request.prompt is")
    found = unpacked(details_of(error))
    assert found["ErrorInfo"].reason == "INVALID_ARGUMENT" and found["ErrorInfo"].domain == "wolf.v1.GeriService"
    assert found["ErrorInfo"].metadata["limit"] and found["ErrorInfo"].metadata["request_id"] == "ans"
    assert found["BadRequest"].field_violations[0].field == "request.prompt"
    assert found["LocalizedMessage"].message and "RetryInfo" not in found
    with pytest.raises(grpc.RpcError) as raised:
        answer(geri, "alpha", common_pb2.RAGContext(), queries=tuple(f"q{i}" for i in range(17)))
    found = unpacked(details_of(raised.value))
    assert found["BadRequest"].field_violations[0].field == "queries_used"
    assert dict(found["ErrorInfo"].metadata) == {"limit": "16", "setting": "answering.max_queries_used",
                                                 "request_id": "ans"}
