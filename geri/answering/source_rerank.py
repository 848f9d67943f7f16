"""Sources reordered by how likely the answering model finds the question given each one (UPR).

The model cites its first source, so which retrieved passage comes first decides most answers. Among the
sources whose retrieval score is within ``margin`` of the best, the one after which the model finds the
question's tokens likeliest on average comes first: ``"Passage: {p}\\nPlease write a question based on this
passage.\\nQuestion:"`` + the question (Sachan et al. 2022, "Improving Passage Retrieval with Zero-Shot
Question Generation"). Sources further below keep the retriever's order; so does everything when the backend
cannot score continuations, when a source is not English (the prompt is English), or when scoring fails.
Chosen on the dev split of squad-answers (docs/decisions/0395-question-likelihood-reranking.md).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence

from wolf.v1 import common_pb2

from geri.answering.evidence import document_language
from geri.answering.span_scoring import MAX_QUESTION_CHARS
from geri.backends.base import ContinuationScorer, holding
from wolf_service.errors import Cancelled, ServiceError

log = logging.getLogger("geri.answering")

PROMPT = "Passage: {passage}\nPlease write a question based on this passage.\nQuestion:"
# Longer text is cut from the prompt: a retrieved chunk as the model was shown it.
MAX_PASSAGE_CHARS = 3000


def question_prompt(passage: str) -> str:
    """The plain-text prompt the question continues (after a space)."""
    return PROMPT.format(passage=" ".join(passage.split())[:MAX_PASSAGE_CHARS])


def _mean(scores: Sequence[float]) -> float:
    return sum(scores) / len(scores) if scores else -math.inf


def asked_text(question: str) -> str:
    """The question as it is scored: single spaces, at most ``MAX_QUESTION_CHARS``; "" when there is none."""
    return " ".join(question.split())[:MAX_QUESTION_CHARS]


def question_likelihoods(prompts: Sequence[str], asked: str, scorer: ContinuationScorer,
                         cancel: threading.Event | None = None) -> list[float]:
    """The mean log-probability of ``asked`` (:func:`asked_text`) after each of ``prompts``
    (:func:`question_prompt`), one scoring call each.

    Raises:
        Cancelled: ``cancel`` was set while the scoring waited for the model.
        ServiceError, RuntimeError, ValueError: the scorer failed.
    """
    with holding(scorer, cancel):  # one wait for the model for the whole run, no generation between
        return [_mean(scorer.score_continuations(prompt, [f" {asked}"], cancel=cancel)[0]) for prompt in prompts]


def _near_best(sources: Sequence[common_pb2.RetrievedDocument], margin: float) -> list[common_pb2.RetrievedDocument]:
    """The sources (best first) a rerank may move first: those within ``margin`` of the best score."""
    return [d for d in sources if d.relevance_score >= sources[0].relevance_score - margin] if sources else []


def _all_english(documents: Sequence[common_pb2.RetrievedDocument]) -> bool:
    return all(document_language(d) == "en" for d in documents)


def in_english(sources: Sequence[common_pb2.RetrievedDocument], margin: float) -> bool:
    """Are the sources a rerank within ``margin`` of the best may move first all English (the prompt is)?"""
    return _all_english(_near_best(sources, margin))


def rerank_sources(question: str, sources: Sequence[common_pb2.RetrievedDocument], scorer: ContinuationScorer,
                   margin: float, cancel: threading.Event | None = None) -> list[common_pb2.RetrievedDocument]:
    """``sources`` (best first) with those within ``margin`` of the best score ordered by the mean
    log-probability of ``question`` after each (the retriever's order on a tie), the rest after them as given.

    Args:
        question: What the user asked.
        sources: The retrieved sources, best first.
        scorer: The answering backend's continuation scorer.
        margin: How far below the best retrieval score a source may be and still be moved first.
        cancel: Set when the caller has gone: the scoring stops waiting for the model.

    Raises:
        Cancelled: ``cancel`` was set while the scoring waited for the model.
    """
    docs = list(sources)
    near = _near_best(docs, margin)
    asked = asked_text(question)
    if len(near) < 2 or not asked or not _all_english(near):
        return docs
    try:
        likelihood = question_likelihoods([question_prompt(d.content) for d in near], asked, scorer, cancel)
    except Cancelled:
        raise  # the caller has gone: nothing is left to order
    except (ServiceError, RuntimeError, ValueError) as exc:  # the retriever's order is still a good one
        log.warning("scoring the sources by question likelihood failed (%s): the retriever's order stays", exc)
        return docs
    order = sorted(range(len(near)), key=lambda i: -likelihood[i])  # stable: ties keep the retriever's order
    return [near[i] for i in order] + docs[len(near):]
