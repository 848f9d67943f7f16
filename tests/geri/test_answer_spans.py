"""Short answers as spans of the cited source (geri/answering/spans.py) and their hook in grounding."""

from __future__ import annotations

from wolf.v1 import common_pb2

from geri.answering.grounding import ground
from geri.answering.sources import number_sources
from geri.answering.spans import (
    answer_sentence,
    best_span,
    candidate_spans,
    expected_kind,
    ranked_sentences,
    scored_spans,
)

SENTENCE = "Albert Einstein was born in 1879 in Ulm, in the Kingdom of Württemberg."
QUESTION = "When was Einstein born?"


def test_candidates_are_substrings_that_add_something_to_the_question() -> None:
    spans = candidate_spans(SENTENCE, QUESTION)
    assert all(span in SENTENCE for span in spans)
    assert "1879" in spans and "Ulm" in spans and "Kingdom of Württemberg" in spans
    assert "Einstein was born" not in spans  # only the question's own words
    assert "in the" not in spans  # only stop words
    assert "Ulm," not in spans and "Württemberg." not in spans  # punctuation at the ends is trimmed
    assert spans == sorted(spans, key=lambda s: len(s.split()))  # shortest first
    assert all(len(span.split()) <= 8 for span in spans)


def test_the_span_is_the_kind_of_answer_the_question_expects() -> None:
    assert expected_kind("How many members did the church have?") == "number"
    assert expected_kind("When was the Riemann hypothesis proposed?") == "date"
    assert expected_kind("Who wrote the book?") == "name"
    assert expected_kind("What does FIS stand for?") == ""
    assert best_span("When was Einstein born?", SENTENCE)[0] == "1879"
    assert best_span("Who was born in Ulm?", SENTENCE)[0] == "Einstein"
    membership = "By the 2008 General Conference, total UMC membership was estimated at 11.4 million members."
    assert best_span("How many members did the UMC have by 2008?", membership)[0] == "11.4"


def test_the_answer_sentence_is_the_one_that_covers_the_question_not_the_first() -> None:
    sentences = ["The Rhine is a European river.", "The tallest mountain of the basin is the Finsteraarhorn.",
                 "It flows into the North Sea."]
    number, span = answer_sentence("What is the tallest mountain of the Rhine basin?", sentences, preferred=1)
    assert number == 2 and span == "Finsteraarhorn"


def test_ground_with_short_answers_gives_the_span_and_quotes_its_sentence() -> None:
    doc = common_pb2.RetrievedDocument(
        document_id="rhine", chunk_id="rhine#0", relevance_score=0.7,
        content="The Rhine is a European river. The tallest mountain of the basin is the Finsteraarhorn.")
    sources, _ = number_sources([doc])
    payload = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "The Rhine is long.",
               "summary": "s", "key_details": ["d"], "confidence": 0.9}
    question = "What is the tallest mountain of the Rhine basin?"
    short = ground(payload, sources, min_support=0.5, question=question, short_answers=True)
    assert short.answered and short.text == "Finsteraarhorn [1]"
    assert short.citations[0].sentence_number == 2
    assert short.citations[0].quote == "The tallest mountain of the basin is the Finsteraarhorn."
    assert short.citations[0].quote.find("Finsteraarhorn") >= 0  # the answer is copied from what it cites
    long = ground(payload, sources, min_support=0.5, question=question)
    assert long.citations[0].sentence_number == 1 and "Finsteraarhorn" not in long.text


def test_the_ranked_candidates_start_with_the_rules_choice() -> None:
    scored = scored_spans(QUESTION, SENTENCE)
    assert [span for span, _ in scored] == sorted(candidate_spans(SENTENCE, QUESTION),
                                                  key=lambda s: -dict(scored)[s])
    assert scored[0] == best_span(QUESTION, SENTENCE) and scored[0][0] == "1879"
    sentences = ["The Rhine is a European river.", "The tallest mountain of the basin is the Finsteraarhorn."]
    ranked = ranked_sentences("What is the tallest mountain of the Rhine basin?", sentences, preferred=1)
    assert [number for number, _, _ in ranked] == [2, 1]
    assert ranked[0][:2] == answer_sentence("What is the tallest mountain of the Rhine basin?", sentences, 1)
