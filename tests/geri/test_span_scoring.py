"""The model's choice among the span rules' best candidates (geri/answering/span_scoring.py), with a scorer
stand-in at the backend seam; tests/geri/test_answer_rpc.py runs it with the real embedded model."""

from __future__ import annotations

import pytest
from wolf.v1 import common_pb2

from geri.answering.grounding import ground
from geri.answering.phrases import whole_phrases
from geri.answering.sources import number_sources
from geri.answering.span_scoring import (
    EXAMPLES,
    MODEL_CANDIDATES,
    WHOLE_PHRASES,
    candidate_pool,
    consensus,
    model_prompt,
    model_span,
    overlap,
)
from geri.answering.spans import best_span, scored_spans
from tests.geri.scorer_support import RecordingScorer
from wolf_service.errors import Cancelled, Unavailable

SENTENCE = "The biggest city on the river Rhine is Cologne, Germany with a population of more than 1,050,000 people."
QUESTION = "What is the largest city the Rhine runs through?"


class Favouring(RecordingScorer):
    """Scores every continuation -5 per token, except ``liked`` (-1)."""

    def __init__(self, liked: str, error: Exception | None = None) -> None:
        super().__init__(error)
        self.liked = liked

    def scores(self, prompt: str, continuation: str) -> list[float]:
        return [-1.0] if continuation.strip() == self.liked else [-5.0] * len(continuation.split())


def test_the_answer_is_the_candidate_the_weighted_field_agrees_with_most() -> None:
    assert consensus(["a", "b c", "d"], [[-2.0], [-0.5, -0.6], [-1.0]]) == "d"  # no overlap: the likeliest
    assert consensus(["a", "b"], [[-1.0], [-1.0]]) == "a"  # the rules' order on a tie
    assert consensus(["a", "b"], [[], [-9.0]]) == "b"  # an unscored candidate never wins
    assert consensus([], []) == "" and consensus(["a"], [[]]) == ""
    # The likeliest alone ("Ottoman") loses to the answer two close candidates share.
    hesitant = consensus(["Suleiman", "Suleiman the Magnificent", "Ottoman"], [[-1.0], [-0.6, -0.3, -0.4], [-0.9]])
    assert hesitant == "Suleiman"
    assert overlap("Suleiman", "Suleiman the Magnificent") == 0.5 and overlap("“Cologne,”", "cologne") == 1.0


def test_the_model_chooses_among_the_pool_after_sentence_question_answer() -> None:
    rules_first = best_span(QUESTION, SENTENCE)[0]
    assert rules_first == "biggest"  # the rules' own choice is wrong here
    scorer = Favouring("Cologne")
    assert model_span(QUESTION, SENTENCE, scorer) == "Cologne"
    (prompt, continuations), = scorer.calls
    assert prompt == f"{EXAMPLES}{SENTENCE}\nQuestion: {QUESTION}\nAnswer:" == model_prompt(QUESTION, SENTENCE)
    assert model_prompt(QUESTION, SENTENCE, examples=False) == f"{SENTENCE}\nQuestion: {QUESTION}\nAnswer:"
    assert EXAMPLES.count("\nAnswer: ") == 3 and EXAMPLES.endswith("\n\n") and scorer.shared == [EXAMPLES]
    ranked = [span for span, _ in scored_spans(QUESTION, SENTENCE)]
    assert continuations == [f" {span}" for span in candidate_pool(SENTENCE, ranked)]


def test_whole_phrases_break_at_stop_words_and_punctuation_but_keep_names_and_quantities_whole() -> None:
    assert whole_phrases(SENTENCE) == ["biggest city", "river Rhine", "Cologne", "Germany", "population",
                                       "1,050,000 people"]
    sentence = ("The Parliament rented buildings from the City of Edinburgh Council (in 1999), and 11.4 million "
                "members of the Church of England, of the Ancient Greeks.")
    assert whole_phrases(sentence) == ["Parliament rented buildings", "City of Edinburgh Council", "1999",
                                       "11.4 million", "Church of England", "Ancient Greeks"]
    assert all(p in sentence for p in whole_phrases(sentence))
    assert whole_phrases("") == [] and whole_phrases("of the, and.") == []


def test_the_pool_puts_the_rules_best_whole_phrases_first_then_the_rules_order() -> None:
    question = "Who did the Parliament rent buildings from?"
    sentence = "In 1999 the Parliament rented buildings from the City of Edinburgh Council for its members."
    ranked = [span for span, _ in scored_spans(question, sentence)]
    five = ranked[:MODEL_CANDIDATES]
    assert "City of Edinburgh Council" not in five  # the rules rank its pieces higher
    pool = candidate_pool(sentence, ranked)
    assert len(pool) == MODEL_CANDIDATES and WHOLE_PHRASES == 2
    phrases = [span for span in ranked if span in whole_phrases(sentence)][:WHOLE_PHRASES]
    assert "City of Edinburgh Council" in phrases and pool[:WHOLE_PHRASES] == phrases
    assert pool[WHOLE_PHRASES:] == [span for span in ranked if span not in phrases][:MODEL_CANDIDATES - WHOLE_PHRASES]
    assert candidate_pool(sentence, ranked, phrases=0) == five
    assert model_span(question, sentence, Favouring("City of Edinburgh Council")) == "City of Edinburgh Council"


def test_a_span_outside_the_pool_is_never_chosen() -> None:
    ranked = [span for span, _ in scored_spans(QUESTION, SENTENCE)]
    pool = candidate_pool(SENTENCE, ranked)
    assert "more than 1,050,000 people" in ranked and "more than 1,050,000 people" not in pool
    assert model_span(QUESTION, SENTENCE, Favouring("more than 1,050,000 people")) in pool


def test_the_rules_choose_when_the_scorer_fails_the_language_is_not_english_or_there_is_no_choice() -> None:
    failing = Favouring("Cologne", Unavailable("model gone"))
    assert model_span(QUESTION, SENTENCE, failing) == "biggest" and len(failing.calls) == 1
    german = Favouring("Köln")
    satz = "Die größte Stadt am Rhein ist Köln mit mehr als einer Million Einwohnern."
    assert model_span("Welche ist die größte Stadt am Rhein?", satz, german, language="de") == best_span(
        "Welche ist die größte Stadt am Rhein?", satz, "de")[0]
    assert german.calls == []
    lone = Favouring("x")
    assert model_span("What is the Rhine?", "The Rhine.", lone) == "" and lone.calls == []


def test_overlong_text_is_cut_from_the_prompt() -> None:
    prompt = model_prompt("why? " * 500, "word " * 500)
    assert len(prompt) < len(EXAMPLES) + 1300 and prompt.endswith("\nAnswer:")


def test_ground_with_a_scorer_answers_with_its_span_and_quotes_the_rules_sentence() -> None:
    doc = common_pb2.RetrievedDocument(document_id="rhine", chunk_id="rhine#0", relevance_score=0.8,
                                       content=f"The Rhine is a European river. {SENTENCE}")
    sources, _ = number_sources([doc])
    payload = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "The Rhine.",
               "summary": "s", "key_details": [], "confidence": 0.9}
    rules = ground(payload, sources, min_support=0.5, question=QUESTION, short_answers=True)
    model = ground(payload, sources, min_support=0.5, question=QUESTION, short_answers=True,
                   scorer=Favouring("Cologne"))
    assert rules.text == "biggest [1]" and model.text == "Cologne [1]"
    assert model.citations[0].sentence_number == rules.citations[0].sentence_number == 2
    assert model.citations[0].quote == SENTENCE


def test_a_caller_that_left_while_the_scoring_waited_gets_no_span_of_the_rules() -> None:
    with pytest.raises(Cancelled):
        model_span(QUESTION, SENTENCE, Favouring("Cologne", Cancelled("the request was cancelled")))
