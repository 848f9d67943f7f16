"""The answer gate's evidence (geri/answering/evidence.py): does the best passage say what the question asks?

Real stemmers (PyStemmer), stop-word lists (stop-words) and word frequencies (wordfreq); no fakes.
"""

from __future__ import annotations

from wolf.v1 import common_pb2

from geri.answering.evidence import (
    Evidence,
    Gate,
    Passage,
    assess,
    evidence_reason,
    may_pass_after_rerank,
    passages,
    question_terms,
    terms,
)
from geri.settings import AnsweringSettings

QUEBEC = ("The British were defeated outside Quebec City in April 1760 at the Battle of Sainte-Foy, but the "
          "French could not retake the city.")
BOSTON = ("The British army lost many soldiers at the Battle of Bunker Hill near Boston in 1775, although "
          "they took the hill.")


def test_terms_are_stemmed_without_stop_or_question_words() -> None:
    assert terms("Which territory was ceded to Britain?") == {"territori", "cede", "britain"}
    assert question_terms("What battle did the British lose?").keys() == {"battl", "british", "lose"}


def test_rare_words_weigh_more_than_common_ones() -> None:
    weights = question_terms("What did Tanaghrisson require?")
    assert weights["tanaghrisson"] > 2 * weights["requir"]


def test_a_passage_that_says_what_is_asked_covers_the_question_and_one_about_something_else_does_not() -> None:
    question = "In what battle outside Quebec City were the British defeated in 1760?"
    on_topic = assess(question, [Passage(QUEBEC, 0.5), Passage(BOSTON, 0.4)])
    assert on_topic.coverage == 1.0 and on_topic.missing == ()
    off_topic = assess(question, [Passage(BOSTON, 0.5)])
    # "battle" and "British" occur; the names and the year that make the question specific do not, nor the verb.
    assert off_topic.coverage < 0.45
    assert set(off_topic.missing) == {"quebec", "citi", "1760", "defeat"}


def test_coverage_is_the_best_passages_and_margin_is_its_lead() -> None:
    question = "In what battle outside Quebec City were the British defeated in 1760?"
    ev = assess(question, [Passage(BOSTON, 0.5), Passage(QUEBEC, 0.4)])
    assert ev.coverage < 0.45  # the second passage covers everything, but an answer stands on the first
    assert abs(ev.margin - 0.1) < 1e-9


def test_german_questions_meet_inflected_and_folded_forms() -> None:
    text = "Die Wohnung in der Marktgasse 15 kostet 950 Euro Miete im Monat, die Kaution beträgt drei Monatsmieten."
    ev = assess("Wie hoch ist die Kaution für die Wohnung in der Marktgasse 15?", [Passage(text, 0.5, "de")])
    assert ev.coverage == 1.0


def test_the_gate_needs_a_relevant_score_and_enough_evidence_and_says_which_failed() -> None:
    gate = Gate(min_score=0.25, min_evidence=0.74, coverage_weight=0.6)
    assert gate.decide(Evidence(0.5, 0.1, 0.5, 0.5, 3)) == (True, "")  # 0.5 + 0.3
    assert gate.decide(Evidence(0.75, 0.1, 0.0, 0.0, 3)) == (True, "")  # a high score carries a paraphrase
    answered, reason = gate.decide(Evidence(0.2, 0.1, 1.0, 1.0, 3))
    assert not answered and "answer_min_score 0.250" in reason
    answered, reason = gate.decide(Evidence(0.4, 0.1, 0.4, 0.4, 3, ("quebec", "1760")))  # 0.4 + 0.24
    assert not answered and "min_evidence 0.740" in reason and "quebec" in reason


def test_evidence_reason_applies_the_settings_to_retrieved_documents() -> None:
    question = "In what battle outside Quebec City were the British defeated in 1760?"
    docs = [common_pb2.RetrievedDocument(content=BOSTON, relevance_score=0.45)]
    settings = AnsweringSettings()
    assert "min_evidence" in evidence_reason(question, docs, min_score=0.25, settings=settings)
    docs = [common_pb2.RetrievedDocument(content=QUEBEC, relevance_score=0.45)]
    assert evidence_reason(question, docs, min_score=0.25, settings=settings) == ""
    assert evidence_reason(question, docs, min_score=0.5, settings=settings).startswith("no source is relevant")


def test_no_passage_or_no_content_term() -> None:
    assert assess("What battle?", []).score == 0.0
    ev = assess("What is it?", [Passage(BOSTON, 0.4)])
    assert ev.question_terms == 0 and ev.coverage == 1.0  # nothing to check: the score decides


def test_passages_from_retrieved_documents_keep_score_and_language() -> None:
    docs = [common_pb2.RetrievedDocument(content="Die Miete.", relevance_score=0.6, metadata={"language": "de"}),
            common_pb2.RetrievedDocument(content="Rent.", relevance_score=0.5)]
    assert passages(docs) == [Passage("Die Miete.", 0.6000000238418579, "de"), Passage("Rent.", 0.5, "en")]


def test_a_source_near_the_best_that_says_what_is_asked_may_pass_once_the_rerank_puts_it_first() -> None:
    question = "In what battle outside Quebec City were the British defeated in 1760?"
    settings = AnsweringSettings()

    def docs(*scored: tuple[str, float]) -> list[common_pb2.RetrievedDocument]:
        return [common_pb2.RetrievedDocument(content=text, relevance_score=score) for text, score in scored]

    near = docs((BOSTON, 0.45), (QUEBEC, 0.44))
    assert evidence_reason(question, near, min_score=0.25, settings=settings)  # Freki's first does not say it
    assert evidence_reason(question, near[::-1], min_score=0.25, settings=settings) == ""
    assert may_pass_after_rerank(question, near, min_score=0.25, settings=settings, margin=0.07)
    far = docs((BOSTON, 0.45), (QUEBEC, 0.30))  # beyond the margin: no rerank moves it first
    assert not may_pass_after_rerank(question, far, min_score=0.25, settings=settings, margin=0.07)
    assert not may_pass_after_rerank(question, docs((BOSTON, 0.45), (BOSTON, 0.44)), min_score=0.25,
                                     settings=settings, margin=0.07)
    assert not may_pass_after_rerank(question, [], min_score=0.25, settings=settings, margin=0.07)


def test_the_source_the_rerank_chose_is_held_to_reranked_min_evidence() -> None:
    question = "In what battle outside Quebec City were the British defeated in 1760?"
    docs = [common_pb2.RetrievedDocument(content=QUEBEC, relevance_score=0.45)]
    settings = AnsweringSettings(min_evidence=0.5, reranked_min_evidence=1.9)
    assert evidence_reason(question, docs, min_score=0.25, settings=settings) == ""
    assert "below reranked_min_evidence 1.900" in evidence_reason(question, docs, min_score=0.25, settings=settings,
                                                         reranked=True)
    assert not may_pass_after_rerank(question, docs, min_score=0.25, settings=settings, margin=0.07)
