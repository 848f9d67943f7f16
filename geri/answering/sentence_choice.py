"""The short answer's sentence chosen by the span rules and how likely the answering model finds the question
given each of their best sentences.

The span rules (geri/answering/spans.py) rank the cited source's sentences by the question's coverage and
their best span; when their first is the wrong one, the right one is most often second.
Of the rules' best ``SENTENCES``, the one with the highest rules score + ``WEIGHT`` × the question's mean
log-probability after the source reranker's prompt with the sentence (cut as the numbered sources cut it) as
the passage (geri/answering/source_rerank.py, UPR) is chosen: a clearly likelier question overturns a small
lead of the rules, never a large one. The rules' first stays when the backend cannot score continuations, the source is
not English (the prompt is English), or the scoring fails. Chosen on the dev split of squad-answers
(docs/decisions/0425-sentence-choice-by-question-likelihood.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from geri.answering.source_rerank import asked_text, question_likelihoods, question_prompt
from geri.answering.sources import MAX_SENTENCE_CHARS
from geri.backends.base import ContinuationScorer
from wolf_service.errors import Cancelled, ServiceError

log = logging.getLogger("geri.answering")

SENTENCES = 2
WEIGHT = 8.0


def sentence_prompt(sentence: str) -> str:
    """The prompt the question continues (after a space) for ``sentence``: the sentence as the answering model
    was shown it (a longer one, a chunk's tail joined to its last sentence, would cost the scoring more than
    the answer's own prompt did)."""
    return question_prompt(sentence[:MAX_SENTENCE_CHARS])


def likeliest_sentence(question: str, ranked: Sequence[tuple[str, float]], scorer: ContinuationScorer,
                       language: str = "en", cancel: threading.Event | None = None) -> int:
    """The index in ``ranked`` of the sentence the short answer comes from (0: the rules' first).

    Args:
        question: What the user asked.
        ranked: (sentence, rules score) as the span rules rank them, best first.
        scorer: The answering backend's continuation scorer.
        language: The source's language code.
        cancel: Set when the caller has gone: the scoring stops waiting for the model.

    Raises:
        Cancelled: ``cancel`` was set while the scoring waited for the model.
    """
    top = list(ranked[:SENTENCES])
    asked = asked_text(question)
    if len(top) < 2 or not asked or language != "en":
        return 0
    try:
        likelihood = question_likelihoods([sentence_prompt(sentence) for sentence, _ in top], asked, scorer, cancel)
    except Cancelled:
        raise  # the caller has gone: an answer from the rules' sentence must not be stored as its own
    except (ServiceError, RuntimeError, ValueError) as exc:  # the rules' sentence is still a good one
        log.warning("scoring the answer's sentences by question likelihood failed (%s): the rules choose", exc)
        return 0
    return max(range(len(top)), key=lambda k: (top[k][1] + WEIGHT * likelihood[k], -k))
