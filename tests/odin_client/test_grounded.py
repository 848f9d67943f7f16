"""Grounded answers over the contract: Odin chains Geri's RewriteQuery, Freki's RetrieveContext and Geri's
Answer / AnswerStream and fills its Answer from Geri's GroundedAnswer — over real gRPC servers with a
scripted Geri at the servicer seam. The answering rules are Geri's (tests/geri/test_answering_rules.py);
the real Geri and model are in test_end_to_end.py and scripts/eval/answers.py."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import grpc
import pytest
from wolf.v1 import common_pb2

from odin_client import AsyncOdinClient, DeadlineExceeded, OdinClient, StreamInterrupted
from odin_client.settings import OdinSettings
from odin_client.types.results import Answer
from tests.odin_client.grounded_servicer_support import REWRITTEN, GroundedGeri
from tests.odin_client.servicers_support import FakeClock, sample_context


def calls(servicer: GroundedGeri, method: str) -> list[Any]:
    return [c.request for c in servicer.rec.calls if c.method == method]


def test_ask_sends_freki_context_to_geri_answer_and_fills_the_answer(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, tenant_id="acme")
    result = client.ask("Which port?", top_k=2, model="m1")
    assert result.answered and result.citations[0].document_id == "gateway-ports"
    assert result.citations[0].quote == "The Skadi gateway listens on TCP port 7443 by default."
    assert result.summary == "Port 7443." and result.key_details == ["TLS"] and result.confidence == 0.91
    assert result.citations[0].score == 0.91 and result.citations[0].title == "corpus/ports.md"
    assert result.text == "The gateway listens on port 7443 [1]." and result.used_context
    assert [s.document_id for s in result.sources] == ["gateway-ports", "gateway-errors"]
    assert result.generation is not None and result.generation.model == "test-model"
    assert result.generation.warnings == ["context trimmed"] and result.query == "Which port?"
    (sent,) = calls(geri[0], "Answer")
    assert sent.request.context == sample_context()  # Freki's context, unchanged: Geri numbers and gates it
    assert (sent.request.prompt, sent.request.tenant_id, sent.request.generation.model) == ("Which port?", "acme", "m1")
    assert not sent.request.generation.json_schema and not sent.request.generation.system_prompt
    # Unset answer_* settings leave Geri's `answering` settings in charge; nothing before retrieval.
    assert not any(sent.options.HasField(f) for f in ("min_score", "max_sources", "max_citations", "min_support",
                                                       "model_abstains"))
    assert not sent.request.metadata.HasField("max_tokens") and geri[0].rec.count("RewriteQuery") == 0
    assert geri[0].rec.count("Generate") == 0


def test_the_answer_settings_are_sent_as_answer_options(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, answer_min_score=0.95,
                         answer_max_sources=2, answer_max_citations=3, answer_min_support=0.25,
                         answer_model_abstains=True, answer_max_tokens=128)
    client.ask("Which port?")
    client.ask("Which port?", max_tokens=64)
    first, second = calls(geri[0], "Answer")
    options = first.options
    assert (options.max_sources, options.max_citations, options.model_abstains) == (2, 3, True)
    assert options.min_score == pytest.approx(0.95) and options.min_support == pytest.approx(0.25)
    assert first.request.metadata.max_tokens == 128 and second.request.metadata.max_tokens == 64


def test_an_abstention_before_the_model_is_passed_on_without_a_generation(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    freki[0].context = common_pb2.RAGContext(score_threshold=0.3, below_threshold=3)
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    result = client.ask("What is the capital of Peru?")
    assert not result.answered and result.text == "" and result.citations == [] and result.confidence == 0.0
    assert "found nothing relevant" in result.reason and result.generation is None and not result.used_context
    (sent,) = calls(geri[0], "Answer")
    assert (sent.request.context.below_threshold, sent.request.context.score_threshold) == (3, pytest.approx(0.3))


def test_a_follow_up_is_rewritten_by_geri_before_retrieval(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    result = client.ask("and which port?", session_id="known", owner_id="alice")
    assert result.query == REWRITTEN and result.session_id == "known"
    assert freki[0].rec.calls[-1].request.prompt == result.query
    (rewrite,) = calls(geri[0], "RewriteQuery")
    assert (rewrite.request.prompt, rewrite.request.metadata.session_id, rewrite.variants) == (
        "and which port?", "known", 0)
    (final,) = calls(geri[0], "Answer")
    meta = final.request.metadata
    assert (meta.session_id, meta.owner_id, final.request.prompt) == ("known", "alice", "and which port?")
    # A new session has no history: Geri keeps the question.
    client.ask("Which port?", session_id="fresh")
    assert freki[0].rec.calls[-1].request.prompt == "Which port?"


def test_turns_the_caller_keeps_go_to_the_rewrite_not_to_the_answer(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    history = [common_pb2.ChatTurn(role="user", content="Tell me about Skadi."),
               common_pb2.ChatTurn(role="assistant", content="It routes traffic.")]
    result = client.ask("and which port?", history=history)
    assert result.query == REWRITTEN
    (rewrite,) = calls(geri[0], "RewriteQuery")
    assert [t.content for t in rewrite.request.generation.messages] == ["Tell me about Skadi.", "It routes traffic."]
    assert not calls(geri[0], "Answer")[0].request.generation.messages


def test_rewriting_off_asks_no_rewrite(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, rewrite_followups=False)
    assert client.ask("and which port?", session_id="known").query == "and which port?"
    assert geri[0].rec.count("RewriteQuery") == 0


def test_query_variants_are_sent_to_freki_for_fusion(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, query_variants=2)
    result = client.ask("Which port?")
    assert result.query_variants == ["gateway port number", "port of the gateway"]
    assert list(freki[0].rec.calls[-1].request.retrieval.query_variants) == result.query_variants
    (rewrite,) = calls(geri[0], "RewriteQuery")
    assert rewrite.variants == 2 and not rewrite.request.metadata.session_id  # no conversation: variants only


def test_a_failed_rewrite_does_not_fail_the_answer(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    """Rewriting a follow-up and generating query variants are optional: when Geri cannot do them (an older
    Geri, or one whose model failed), the question is answered as asked."""
    geri[0].fail_rewrite = True
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, query_variants=2)
    result = client.ask("and which port?", session_id="known")
    assert result.answered and result.query == "and which port?" and result.query_variants == []
    retrieve = freki[0].rec.calls[-1].request
    assert retrieve.prompt == "and which port?" and list(retrieve.retrieval.query_variants) == []


def test_ask_stream_yields_provisional_deltas_then_the_checked_answer(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    *deltas, final = client.ask_stream("Which port?", session_id="known")
    assert deltas == ["The gateway listens ", "on port 7443 [1]."]
    assert isinstance(final, Answer) and final.text == "".join(deltas) and not final.revised
    assert final.citations[0].document_id == "gateway-ports" and final.query == REWRITTEN
    assert geri[0].rec.count("AnswerStream") == 1 and geri[0].rec.count("Answer") == 0
    geri[0].revised_text = "The Skadi gateway listens on TCP port 7443 by default. [1]"
    *_, revised = client.ask_stream("Which port?")
    assert isinstance(revised, Answer) and revised.revised and revised.extractive
    assert revised.text == geri[0].revised_text and revised.to_dict()["revised"] is True


def test_an_answer_stream_without_its_final_event_is_interrupted(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    geri[0].stream_break_after = 1
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    events = client.ask_stream("Which port?")
    assert next(events) == "The gateway listens "
    with pytest.raises(StreamInterrupted, match="AnswerStream ended after 1 event"):
        next(events)


def test_answer_stream_is_retried_only_before_its_first_event(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    geri[0].rec.faults.fail_times = 1  # UNAVAILABLE once: nothing was sent yet, so it is sent again
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, clock=FakeClock())
    *_, final = client.ask_stream("Which port?")
    assert isinstance(final, Answer) and final.generation is not None and final.generation.attempts == 2
    assert geri[0].rec.count("AnswerStream") == 2


@pytest.mark.parametrize(("session_id", "attempts"), [("", 2), ("known", 1)])
def test_a_deadline_is_retried_only_outside_a_session(make_client, freki, geri, session_id: str,  # type: ignore[no-untyped-def]
                                                      attempts: int) -> None:
    """Outside a session Answer stores nothing and is retried after DEADLINE_EXCEEDED like a read; in one, Geri
    may have stored the turn, so only UNAVAILABLE (nothing arrived) is retried, as for Generate."""
    geri[0].rec.faults = type(geri[0].rec.faults)(code=grpc.StatusCode.DEADLINE_EXCEEDED, fail_times=1)
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, clock=FakeClock(),
                         rewrite_followups=False)
    if attempts == 1:
        with pytest.raises(DeadlineExceeded):
            client.ask("Which port?", session_id=session_id)
    else:
        assert client.ask("Which port?", session_id=session_id).answered
    assert geri[0].rec.count("Answer") == attempts


def test_the_async_client_runs_the_same_calls(freki, geri) -> None:  # type: ignore[no-untyped-def]
    async def run() -> tuple[Answer, list[str | Answer]]:
        settings = OdinSettings(freki_target=freki[1].address, geri_target=geri[1].address, answer_min_score=0.5)
        async with AsyncOdinClient(settings) as client:
            answer = await client.ask("and which port?", session_id="known")
            streamed = [event async for event in client.ask_stream("Which port?", max_tokens=50)]
            return answer, streamed

    answer, streamed = asyncio.run(run())
    assert answer.answered and answer.query == REWRITTEN and answer.citations[0].location == ""
    assert streamed[:-1] == geri[0].answer_deltas and isinstance(streamed[-1], Answer)
    unary, stream = calls(geri[0], "Answer")[0], calls(geri[0], "AnswerStream")[0]
    assert unary.options.min_score == pytest.approx(0.5) and stream.request.metadata.max_tokens == 50
    assert unary.request.metadata.session_id == "known"


def test_a_citation_carries_its_location(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    context = sample_context()
    context.documents.reverse()  # the PDF page chunk first: the scripted Geri cites the first document
    freki[0].context = context
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    (cite,) = client.ask("What is SKD-404?").citations
    assert (cite.document_id, cite.location, cite.chunk_index) == ("gateway-errors", "p. 3", 2)


@pytest.mark.parametrize("name", ["ask", "ask_stream"])
def test_both_clients_take_the_same_arguments(name: str) -> None:
    blocking, awaited = (inspect.signature(getattr(cls, name)).parameters for cls in (OdinClient, AsyncOdinClient))
    assert list(blocking.items()) == list(awaited.items())
