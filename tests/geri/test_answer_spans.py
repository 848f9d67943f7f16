"""Short answers as spans of the cited sentence (geri/answering/spans.py)."""

from __future__ import annotations

from geri.answering.spans import candidate_spans, overlap_f1, snap

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


def test_snap_matches_what_the_answer_adds_to_the_question_and_prefers_the_shorter_span() -> None:
    spans = candidate_spans(SENTENCE, QUESTION)
    assert snap("He was born in the year 1879.", spans, QUESTION) == ("1879", 1.0)
    assert snap("born in Ulm in Württemberg", spans, QUESTION) == ("Ulm, in the Kingdom of Württemberg", 0.8)


def test_snap_finds_nothing_when_the_answer_shares_no_new_term() -> None:
    spans = candidate_spans(SENTENCE, QUESTION)
    assert snap("Einstein was born.", spans, QUESTION) == ("", 0.0)
    assert snap("in Paris", spans, QUESTION) == ("", 0.0)


def test_overlap_f1_is_squads_token_f1() -> None:
    assert overlap_f1("the Old Rhine Bridge", "Old Rhine Bridge at Constance") == 2 * 1 * 0.6 / 1.6
    assert overlap_f1("Constance", "Ulm") == 0.0
