"""Grounded answers in Geri, unit level: numbering, the answer schema, the grounding rules, rewrite parsing.

The same rules over real gRPC with the real embedded model are in test_answer_rpc.py.
"""

from __future__ import annotations

import jsonschema
import pytest
from wolf.v1 import common_pb2

from geri.answering.grounding import ground, support
from geri.answering.queries import grounded_rewrite, history_turns, parse_rewrite, parse_variants
from geri.answering.schema import answer_schema
from geri.answering.sources import MAX_SENTENCE_CHARS, NumberedSource, number_sources, split_sentences

DOCS = [
    common_pb2.RetrievedDocument(
        document_id="relay", chunk_id="relay#0", chunk_index=0, source="docs/relay.md", relevance_score=0.8,
        content="The relay listens on port 9427. It logs to syslog.",
        location=common_pb2.SourceLocation(heading_path=["Relay", "Ports"], label="Relay > Ports")),
    common_pb2.RetrievedDocument(document_id="other", chunk_id="other#1", chunk_index=1, relevance_score=0.4,
                                 content="Weather is nice. Nothing else."),
]


def numbered() -> list[NumberedSource]:
    return number_sources(DOCS)[0]


def answer(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"answered": True, "citations": [{"source": 1, "sentence": 1}],
                               "answer": "Port 9427.", "summary": "s", "key_details": [], "confidence": 0.9}
    return {**base, **fields}


def test_sentences_are_numbered_for_the_prompt_and_the_schema_admits_only_real_ones() -> None:
    assert split_sentences("First one. Second (e.g. this) two!\n\nThird") == [
        "First one.", "Second (e.g. this) two!", "Third"]
    assert split_sentences("Admin API port\n\nThe API listens on 9427. It speaks HTTP.") == [
        "Admin API port: The API listens on 9427.", "It speaks HTTP."]
    items, context = number_sources(DOCS)
    assert context.documents[0].content == "(1) The relay listens on port 9427. (2) It logs to syslog."
    assert context.documents[0].chunk_id == "relay#0" and DOCS[0].content.startswith("The relay")  # a copy
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
    must_cite = answer_schema(numbered(), model_abstains=False)
    assert "anyOf" not in must_cite and must_cite["properties"]["answered"] == {"const": True}


def test_a_supported_answer_is_grounded_with_quotes_locations_and_capped_confidence() -> None:
    verdict = ground(answer(), numbered(), min_support=0.5)
    assert verdict.answered and verdict.text == "Port 9427. [1]"  # marker added when the model gave none
    (cite,) = verdict.citations
    assert (cite.document_id, cite.chunk_id, cite.quote, cite.title) == (
        "relay", "relay#0", "The relay listens on port 9427.", "docs/relay.md")
    assert (cite.source_number, cite.sentence_number, cite.marker) == (1, 1, 1)
    assert list(cite.location.heading_path) == ["Relay", "Ports"]
    assert verdict.confidence == pytest.approx(0.8)  # the model said 0.9; never above its best source's relevance


def test_a_document_without_a_source_is_titled_by_its_id() -> None:
    verdict = ground(answer(citations=[{"source": 2, "sentence": 1}], answer="Weather is nice."), numbered(),
                     min_support=0.5)
    assert verdict.citations[0].title == "other" and verdict.confidence == pytest.approx(0.4)


@pytest.mark.parametrize(("payload", "reason"), [
    (answer(answered=False, reason="not mentioned"), "the model says the sources do not contain the answer: not"),
    (answer(citations=[]), "cites no sentence"),
])
def test_abstentions_say_why(payload: dict[str, object], reason: str) -> None:
    verdict = ground(payload, numbered(), min_support=0.5)
    assert not verdict.answered and reason in verdict.reason
    assert verdict.text == "" and list(verdict.citations) == [] and verdict.confidence == 0.0


def test_an_answer_its_citations_do_not_carry_becomes_the_cited_sentence() -> None:
    verdict = ground(answer(answer="It runs on Tuesdays in Oslo.", summary="Oslo", key_details=["Tuesdays"]),
                     numbered(), min_support=0.5)
    assert verdict.answered and verdict.extractive
    assert verdict.text == "The relay listens on port 9427. [1]"
    assert verdict.summary == "The relay listens on port 9427." and list(verdict.key_details) == []


def test_support_counts_content_words_only() -> None:
    assert support("the port is 9427 [1]", ["The relay listens on port 9427."]) == 1.0
    assert support("Yes.", []) == 1.0
    assert support("port 80", ["port 9427"]) == 0.5


def test_a_citation_of_a_source_not_shown_is_dropped() -> None:
    """Out-of-range numbers (hand-made payloads), and sources left out to fit the window."""
    verdict = ground(answer(citations=[{"source": 7, "sentence": 1}, {"source": 1, "sentence": 99}]), numbered(),
                     min_support=0.5)
    assert not verdict.answered and "cites no sentence" in verdict.reason
    only_first = numbered()[:1]
    verdict = ground(answer(citations=[{"source": 2, "sentence": 1}]), only_first, min_support=0.5)
    assert not verdict.answered


@pytest.mark.parametrize(("citations", "text", "grounded"), [
    # The model's [2] was its second citation; its first (a source left out to fit the window) is dropped.
    ([{"source": 2, "sentence": 1}, {"source": 1, "sentence": 1}], "Port 9427 [2].", "Port 9427 [1]."),
    ([{"source": 1, "sentence": 1}], "Port 9427 [7].", "Port 9427. [1]"),  # a marker of no citation at all
    ([{"source": 1, "sentence": 1}, {"source": 1, "sentence": 1}], "Port [1] 9427 [2].", "Port [1] 9427 [1]."),
])
def test_the_answer_markers_point_at_the_citations_that_remain(citations: list[dict[str, int]], text: str,
                                                                grounded: str) -> None:
    verdict = ground(answer(citations=citations, answer=text), numbered()[:1], min_support=0.5)
    assert verdict.answered and [c.marker for c in verdict.citations] == [1]
    assert verdict.text == grounded


def test_a_citation_quotes_no_more_of_a_sentence_than_the_model_was_shown() -> None:
    # A chunk without sentence ends (or with more sentences than are numbered) is one huge last sentence:
    # quoting all of it made a 5 MB chunk a 10 MB reply (quote and summary), past a caller's 4 MB default.
    doc = common_pb2.RetrievedDocument(document_id="big", relevance_score=0.9,
                                       content="The relay has many settings. Word " + "word " * 100_000)
    (source,), shown = number_sources([doc])
    assert [len(s) for s in source.sentences] == [len("The relay has many settings."), MAX_SENTENCE_CHARS]
    assert all(f"({i}) {s}" in shown.documents[0].content for i, s in enumerate(source.sentences, 1))
    verdict = ground(answer(citations=[{"source": 1, "sentence": 2}], answer="word"), [source], min_support=0.5)
    (cite,) = verdict.citations
    assert cite.quote == source.sentences[1] and doc.content.startswith(f"The relay has many settings. {cite.quote}")


def test_history_keeps_the_last_question_and_answer_turns_as_text() -> None:
    turns = [common_pb2.ChatTurn(role="user", content="q1"), common_pb2.ChatTurn(role="tool", content="x"),
             common_pb2.ChatTurn(role="assistant", content='{"answered": true, "answer": "a1 [1]"}'),
             common_pb2.ChatTurn(role="assistant", content="  "), common_pb2.ChatTurn(role="user", content="q2")]
    assert [(t.role, t.content) for t in history_turns(turns, keep=2)] == [("assistant", "a1 [1]"), ("user", "q2")]
    assert history_turns(turns, keep=0) == []


def test_rewrites_and_variants_are_parsed_defensively() -> None:
    assert parse_rewrite('{"query": " Which port does the relay use? "}', "and which?") == (
        "Which port does the relay use?")
    assert parse_rewrite("not json", "and which?") == "and which?"
    assert parse_rewrite('{"query": ""}', "and which?") == "and which?"
    assert parse_variants('{"variants": ["relay port", "Relay Port", "the query", "port of relay"]}',
                          "The query", 2) == ["relay port", "port of relay"]
    assert parse_variants("[]", "q", 2) == []


def test_a_rewrite_is_used_only_when_it_restates_the_conversation() -> None:
    turns = [common_pb2.ChatTurn(role="user", content="Which port does the Hrafn relay admin API use?"),
             common_pb2.ChatTurn(role="assistant", content="It listens on TCP port 9427 [1].")]
    question = "Where does it write its logs?"
    assert grounded_rewrite("Where does the Hrafn relay write its logs?", question, turns) == (
        "Where does the Hrafn relay write its logs?", "")
    kept, warning = grounded_rewrite("https://api.hrafn.com/v2/admin/logs/1", question, turns)
    assert kept == question and "was not used" in warning and "of its words occur" in warning and "below 75%" in warning


@pytest.mark.parametrize("language", ["en", "en-US", "EN", "eng", "en_GB"])
def test_a_rewrite_is_judged_in_the_language_whatever_the_tag_spells_it(language: str) -> None:
    # "ports", "APIs" and "listening" meet what was said only through the English stemmer and stop words: a tag
    # read as no language kept the question.
    turns = [common_pb2.ChatTurn(role="user", content="Which port does the Hrafn relay admin API use?"),
             common_pb2.ChatTurn(role="assistant", content="It listens on TCP port 9427 [1].")]
    query = "Which ports are the Hrafn relay's admin APIs listening on?"
    assert grounded_rewrite(query, "And the other ones?", turns, language) == (query, "")
