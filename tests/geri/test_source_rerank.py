"""Sources reordered by the question's likelihood after each (geri/answering/source_rerank.py), with a scorer
stand-in at the backend seam; tests/geri/test_answer_rpc.py runs it with the real embedded model."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from wolf.v1 import common_pb2

from geri.answering.source_rerank import question_prompt, rerank_sources
from tests.geri.scorer_support import RecordingScorer
from wolf_service.errors import Cancelled, Unavailable

QUESTION = "Which port does the relay listen on?"


def doc(name: str, score: float, language: str = "") -> common_pb2.RetrievedDocument:
    metadata = {"language": language} if language else {}
    return common_pb2.RetrievedDocument(document_id=name, content=f"About {name}.", relevance_score=score,
                                        metadata=metadata)


class Likes(RecordingScorer):
    """Scores the question ``likes[name]`` per token after the source ``name``."""

    def __init__(self, likes: dict[str, float], error: Exception | None = None) -> None:
        super().__init__(error)
        self.likes = likes

    def scores(self, prompt: str, continuation: str) -> list[float]:
        name = prompt.split("About ", 1)[-1].split(".", 1)[0]
        return [self.likes.get(name, -9.0)] * len(continuation.split())


def ids(docs: Sequence[common_pb2.RetrievedDocument]) -> list[str]:
    return [d.document_id for d in docs]


def test_sources_within_the_margin_are_ordered_by_the_questions_mean_log_probability() -> None:
    scorer = Likes({"a": -3.0, "b": -1.0, "c": -2.0, "d": 0.0})
    docs = [doc("a", 0.9), doc("b", 0.86), doc("c", 0.83), doc("d", 0.7)]
    assert ids(rerank_sources(QUESTION, docs, scorer, margin=0.07)) == ["b", "c", "a", "d"]
    assert [p for p, _ in scorer.calls] == [question_prompt(f"About {n}.") for n in "abc"]  # "d" is beyond it
    assert all(c == [f" {QUESTION}"] for _, c in scorer.calls)
    assert scorer.calls[0][0] == "Passage: About a.\nPlease write a question based on this passage.\nQuestion:"


def test_a_tie_keeps_the_retrievers_order() -> None:
    assert ids(rerank_sources(QUESTION, [doc("a", 0.9), doc("b", 0.9)], Likes({}), margin=0.1)) == ["a", "b"]


def test_the_retrievers_order_stays_without_a_choice_in_another_language_or_when_scoring_fails() -> None:
    alone = Likes({"b": 0.0})
    assert ids(rerank_sources(QUESTION, [doc("a", 0.9), doc("b", 0.5)], alone, margin=0.07)) == ["a", "b"]
    assert alone.calls == [] and rerank_sources(QUESTION, [], alone, margin=0.07) == []
    german = Likes({"b": 0.0})
    docs = [doc("a", 0.9, "de"), doc("b", 0.88, "de")]
    assert ids(rerank_sources(QUESTION, docs, german, margin=0.07)) == ["a", "b"] and german.calls == []
    failing = Likes({"b": 0.0}, Unavailable("model gone"))
    assert ids(rerank_sources(QUESTION, [doc("a", 0.9), doc("b", 0.88)], failing, margin=0.07)) == ["a", "b"]
    assert len(failing.calls) == 1


def test_overlong_text_is_cut_from_the_prompt() -> None:
    scorer = Likes({})
    long = common_pb2.RetrievedDocument(document_id="x", content="word " * 5000, relevance_score=0.9)
    rerank_sources("why " * 1000, [long, doc("b", 0.9)], scorer, margin=0.07)
    prompt, (question,) = scorer.calls[0]
    assert len(prompt) < 3200 and prompt.endswith("\nQuestion:") and len(question) <= 601


def test_a_caller_that_left_while_the_scoring_waited_is_not_answered_in_the_retrievers_order() -> None:
    left = Likes({"b": 0.0}, Cancelled("the request was cancelled while it waited for the model"))
    with pytest.raises(Cancelled):
        rerank_sources(QUESTION, [doc("a", 0.9), doc("b", 0.88)], left, margin=0.07)
