"""The short answer's sentence chosen by the rules and the question's likelihood (geri/answering/sentence_choice.py),
with a scorer stand-in at the backend seam; tests/geri/test_answer_rpc.py runs it with the real embedded model."""

from __future__ import annotations

import pytest
from wolf.v1 import common_pb2

from geri.answering.grounding import ground
from geri.answering.sentence_choice import WEIGHT, likeliest_sentence
from geri.answering.source_rerank import in_english, question_prompt
from geri.answering.sources import MAX_SENTENCE_CHARS, number_sources
from tests.geri.scorer_support import RecordingScorer
from wolf_service.errors import Cancelled, Unavailable

QUESTION = "What is the largest city the Rhine flows through?"
ALPS = "The Rhine flows from the Swiss Alps to the North Sea."
COLOGNE = "The biggest city on the river is Cologne, with more than a million people."


class Likes(RecordingScorer):
    """Scores the question ``likes`` per token after a sentence holding ``word``, -3 otherwise."""

    def __init__(self, word: str, likes: float = -1.0, error: Exception | None = None) -> None:
        super().__init__(error)
        self.word, self.likes = word, likes

    def scores(self, prompt: str, continuation: str) -> list[float]:
        return [self.likes if self.word in prompt else -3.0] * len(continuation.split())


def test_a_clearly_likelier_question_overturns_a_small_lead_of_the_rules_only() -> None:
    scorer = Likes("Cologne")  # 2 nats per token likelier after the second sentence: worth 2 × WEIGHT
    assert likeliest_sentence(QUESTION, [(ALPS, 2.0), (COLOGNE, 0.5)], scorer) == 1
    assert [p for p, _ in scorer.calls] == [question_prompt(ALPS), question_prompt(COLOGNE)]
    assert all(c == [f" {QUESTION}"] for _, c in scorer.calls)
    assert likeliest_sentence(QUESTION, [(ALPS, 2.0 * WEIGHT + 1), (COLOGNE, 0.5)], Likes("Cologne")) == 0
    assert likeliest_sentence(QUESTION, [(ALPS, 1.0), (COLOGNE, 1.0)], Likes("nowhere")) == 0  # a tie: the rules'
    third = Likes("Bonn")  # only the rules' best two are weighed
    assert likeliest_sentence(QUESTION, [(ALPS, 1.0), (COLOGNE, 0.9), ("Bonn is near.", 0.8)], third) == 0
    assert len(third.calls) == 2


def test_the_rules_sentence_stays_without_a_choice_in_another_language_or_when_scoring_fails() -> None:
    alone = Likes("Cologne")
    assert likeliest_sentence(QUESTION, [(COLOGNE, 1.0)], alone) == 0 and alone.calls == []
    german = Likes("Köln")
    ranked = [("Der Rhein fließt zur Nordsee.", 2.0), ("Die größte Stadt ist Köln.", 0.5)]
    assert likeliest_sentence("Welche ist die größte Stadt am Rhein?", ranked, german, "de") == 0
    assert german.calls == []
    failing = Likes("Cologne", error=Unavailable("model gone"))
    assert likeliest_sentence(QUESTION, [(ALPS, 2.0), (COLOGNE, 0.5)], failing) == 0 and len(failing.calls) == 1
    with pytest.raises(Cancelled):
        likeliest_sentence(QUESTION, [(ALPS, 2.0), (COLOGNE, 0.5)],
                           Likes("Cologne", error=Cancelled("the request was cancelled")))


def test_ground_with_a_sentence_scorer_answers_and_quotes_from_the_sentence_it_chose() -> None:
    doc = common_pb2.RetrievedDocument(document_id="rhine", chunk_id="rhine#0", relevance_score=0.8,
                                       content=f"{ALPS} {COLOGNE}")
    sources, _ = number_sources([doc])
    payload = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "The Rhine.",
               "summary": "s", "key_details": [], "confidence": 0.9}
    rules = ground(payload, sources, min_support=0.5, question=QUESTION, short_answers=True)
    assert (rules.citations[0].sentence_number, rules.text) == (1, "Swiss [1]")  # the rules' sentence
    model = ground(payload, sources, min_support=0.5, question=QUESTION, short_answers=True,
                   sentence_scorer=Likes("Cologne"))
    assert (model.citations[0].sentence_number, model.citations[0].quote) == (2, COLOGNE)
    assert model.text == "biggest [1]" and model.summary == COLOGNE  # the rules' span of the chosen sentence


def test_a_source_tagged_with_a_regional_english_is_english_to_the_choosers() -> None:
    # An HTML page's lang="en-US" reaches Geri as the chunk's language (freki/ingest/parsing/html.py).
    for tag in ("en-US", "EN", "en_GB", " en ", "eng"):
        doc = common_pb2.RetrievedDocument(document_id="rhine", chunk_id="rhine#0", relevance_score=0.8,
                                           content=f"{ALPS} {COLOGNE}", metadata={"language": tag})
        sources, _ = number_sources([doc])
        payload = {"answered": True, "citations": [{"source": 1, "sentence": 1}], "answer": "The Rhine.",
                   "summary": "s", "key_details": [], "confidence": 0.9}
        model = ground(payload, sources, min_support=0.5, question=QUESTION, short_answers=True,
                       sentence_scorer=Likes("Cologne"))
        assert model.citations[0].sentence_number == 2, tag
        assert in_english([doc], margin=0.1), tag
    german = common_pb2.RetrievedDocument(document_id="rhein", content="Köln.", metadata={"language": "de-DE"})
    assert not in_english([german], margin=0.1)


def test_a_giant_sentence_is_scored_as_the_answering_model_was_shown_it() -> None:
    giant = "Cologne " + "🐺 " * 5000 + "is the biggest city on the Rhine."  # a chunk's tail joined to its last
    scorer = Likes("Cologne")
    assert likeliest_sentence(QUESTION, [(ALPS, 2.0), (giant, 0.5)], scorer) == 1
    assert scorer.calls[1][0] == question_prompt(giant[:MAX_SENTENCE_CHARS])  # numbered sources show that much
    assert len(scorer.calls[1][0]) < len(question_prompt("")) + MAX_SENTENCE_CHARS
