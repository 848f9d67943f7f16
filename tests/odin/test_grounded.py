"""Grounded answers: the rules Odin applies (unit), and the flow over real gRPC servers with scripted
Freki and Geri at the servicer seam (the real model is in test_end_to_end.py and scripts/eval_answers.py)."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest
from wolf.v1 import common_pb2

from odin_client.aio import AsyncOdinClient
from odin_client.answering.grounding import ground, support
from odin_client.answering.schema import answer_schema
from odin_client.answering.sources import NumberedSource, number_sources, split_sentences
from odin_client.results import Source
from odin_client.settings import OdinSettings

SRC = [Source("relay", "relay#0", "docs/relay.md", 0.8, "The relay listens on port 9427. It logs to syslog."),
       Source("other", "other#1", "", 0.4, "Weather is nice. Nothing else.")]


def numbered() -> list[NumberedSource]:
    context = common_pb2.RAGContext(documents=[common_pb2.RetrievedDocument(document_id=s.document_id,
                                                                            chunk_id=s.chunk_id, content=s.content)
                                               for s in SRC])
    return number_sources(SRC, context)[0]


def answer(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"answered": True, "citations": [{"source": 1, "sentence": 1}],
                               "answer": "Port 9427.", "summary": "s", "key_details": [], "confidence": 0.9}
    return {**base, **fields}


def test_sentences_are_numbered_for_the_prompt_and_the_schema_admits_only_real_ones() -> None:
    assert split_sentences("First one. Second (e.g. this) two!\n\nThird") == [
        "First one.", "Second (e.g. this) two!", "Third"]
    assert split_sentences("Admin API port\n\nThe API listens on 9427. It speaks HTTP.") == [
        "Admin API port: The API listens on 9427.", "It speaks HTTP."]
    items, context = number_sources(SRC, common_pb2.RAGContext(documents=[
        common_pb2.RetrievedDocument(document_id=s.document_id, content=s.content) for s in SRC]))
    assert context.documents[0].content == "(1) The relay listens on port 9427. (2) It logs to syslog."
    answered, silent = answer_schema(items)["anyOf"]
    citation = answered["properties"]["citations"]["items"]["anyOf"]
    assert [(c["properties"]["source"]["const"], c["properties"]["sentence"]["enum"]) for c in citation] == [
        (1, [1, 2]), (2, [1, 2])]
    assert answered["properties"]["citations"]["minItems"] == 1
    assert silent["required"] == ["answered", "reason"] and silent["properties"]["answered"] == {"const": False}


def test_the_schema_admits_a_short_abstention_or_a_cited_answer_and_nothing_else() -> None:
    schema = answer_schema(numbered(), max_citations=1)
    jsonschema.validate({"answered": False, "reason": "not in the sources"}, schema)
    jsonschema.validate(answer(), schema)
    for bad in ({"answered": False, "reason": "x", "answer": "sneaked in"}, answer(citations=[]),
                answer(citations=[{"source": 3, "sentence": 1}]), answer(answered=False),
                {"answered": False, "reason": "x" * 61}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_a_supported_answer_is_grounded_with_quotes_and_capped_confidence() -> None:
    verdict = ground(answer(), numbered(), min_support=0.5)
    assert verdict.answered and verdict.text == "Port 9427. [1]"  # marker added when the model gave none
    (cite,) = verdict.citations
    assert (cite.document_id, cite.quote, cite.title) == ("relay", "The relay listens on port 9427.", "docs/relay.md")
    assert verdict.confidence == 0.8  # the model said 0.9; never above its best source's relevance


@pytest.mark.parametrize(("payload", "reason"), [
    (answer(answered=False, reason="not mentioned"), "the model says the sources do not contain the answer: not"),
    (answer(citations=[]), "cites no sentence"),
])
def test_abstentions_say_why(payload: dict[str, object], reason: str) -> None:
    verdict = ground(payload, numbered(), min_support=0.5)
    assert not verdict.answered and reason in verdict.reason
    assert verdict.text == "" and verdict.citations == [] and verdict.confidence == 0.0


def test_an_answer_its_citations_do_not_carry_becomes_the_cited_sentence() -> None:
    verdict = ground(answer(answer="It runs on Tuesdays in Oslo.", summary="Oslo", key_details=["Tuesdays"]),
                     numbered(), min_support=0.5)
    assert verdict.answered and verdict.extractive
    assert verdict.text == "The relay listens on port 9427. [1]"
    assert verdict.summary == "The relay listens on port 9427." and verdict.key_details == []


def test_support_counts_content_words_only() -> None:
    assert support("the port is 9427 [1]", ["The relay listens on port 9427."]) == 1.0
    assert support("Yes.", []) == 1.0
    assert support("port 80", ["port 9427"]) == 0.5


def test_a_hand_made_citation_out_of_range_is_dropped() -> None:
    verdict = ground(answer(citations=[{"source": 7, "sentence": 1}, {"source": 1, "sentence": 99}]), numbered(),
                     min_support=0.5)
    assert not verdict.answered and "cites no sentence" in verdict.reason


def test_ask_is_grounded_over_the_wire(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    result = client.ask("Which port?")
    assert result.answered and result.citations[0].document_id == "gateway-ports"
    assert result.citations[0].quote == "The Skadi gateway listens on TCP port 7443 by default."
    assert result.summary == "Port 7443." and result.key_details == ["TLS"] and result.confidence == 0.91
    request = geri[0].rec.calls[-1].request
    schema = json.loads(request.generation.json_schema)
    cited = schema["properties"]["citations"]["items"]["anyOf"]  # default: the model must cite (no abstaining)
    assert cited[0]["properties"]["source"] == {"const": 1} and "anyOf" not in schema
    assert "answered" not in request.generation.system_prompt
    assert request.context.documents[0].content.startswith("(1) The Skadi gateway")


def test_a_model_allowed_to_abstain_gets_the_two_shaped_schema(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    geri[0].structured["answered"] = {"answered": False, "reason": "not in the sources"}
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, answer_model_abstains=True)
    result = client.ask("Which port?")
    assert not result.answered and result.reason.endswith("not in the sources")
    schema = json.loads(geri[0].rec.calls[-1].request.generation.json_schema)
    assert [shape["properties"]["answered"] for shape in schema["anyOf"]] == [{"const": True}, {"const": False}]


def test_nothing_relevant_enough_abstains_without_asking_geri(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, answer_min_score=0.95)
    result = client.ask("Which port?")
    assert not result.answered and "best of 2 scored 0.910, below answer_min_score 0.950" in result.reason
    assert result.generation is None and geri[0].rec.count("Generate") == 0


def test_a_follow_up_is_rewritten_from_the_session_before_retrieval(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address)
    result = client.ask("and which port?", session_id="known", owner_id="alice")
    assert result.query == "Which port does the Skadi gateway listen on?"
    assert freki[0].rec.calls[-1].request.prompt == result.query
    rewrite, final = [c.request for c in geri[0].rec.calls if c.method == "Generate"][-2:]
    assert [t.content for t in rewrite.generation.messages][-1] == "It routes traffic."  # answer text, not JSON
    assert rewrite.metadata.session_id == ""  # the rewrite is not stored in the conversation
    assert (final.metadata.session_id, final.metadata.owner_id, final.prompt) == ("known", "alice", "and which port?")
    # A new session has no history: nothing to rewrite.
    client.ask("Which port?", session_id="fresh")
    assert freki[0].rec.calls[-1].request.prompt == "Which port?"


def test_query_variants_are_sent_to_freki_for_fusion(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, query_variants=2)
    result = client.ask("Which port?")
    assert result.query_variants == ["gateway port number", "port of the gateway"]  # duplicate of the query dropped
    assert list(freki[0].rec.calls[-1].request.retrieval.query_variants) == result.query_variants


def test_the_async_client_runs_the_same_flow(freki, geri) -> None:  # type: ignore[no-untyped-def]
    async def run() -> object:
        settings = OdinSettings(freki_target=freki[1].address, geri_target=geri[1].address)
        async with AsyncOdinClient(settings) as client:
            return await client.ask("and which port?", session_id="known")

    result = asyncio.run(run())
    assert result.answered and result.query == "Which port does the Skadi gateway listen on?"  # type: ignore[attr-defined]


def test_a_failed_rewrite_or_variant_request_does_not_fail_the_answer(make_client, freki, geri) -> None:  # type: ignore[no-untyped-def]
    """Rewriting a follow-up and generating query variants are optional steps: when Geri cannot do them
    (a tiny model looping until max_tokens), the question is answered as asked."""
    geri[0].fail_schemas = {"query", "variants"}
    client = make_client(freki_target=freki[1].address, geri_target=geri[1].address, query_variants=2)
    result = client.ask("and which port?", session_id="known")
    assert result.answered and result.query == "and which port?" and result.query_variants == []
    retrieve = freki[0].rec.calls[-1].request
    assert retrieve.prompt == "and which port?" and list(retrieve.retrieval.query_variants) == []
