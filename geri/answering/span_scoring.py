"""Short answers chosen by the model's own likelihood among the span rules' best candidates.

Given the sentence the rules chose (geri/answering/spans.py), ``MODEL_CANDIDATES`` of its spans are scored:
the rules' ``WHOLE_PHRASES`` best whole phrases (geri/answering/phrases.py: the rules favour single words,
and a gold answer of several words is often ranked below pieces of itself), then the rules' best others.
Each is scored by the model as the continuation of "sentence + question + Answer:" after three worked
examples of short answers copied from their sentence (``EXAMPLES``, the same for every question, so the
backend runs them once: they show the small model the answer's form, which it otherwise judges by length
alone). The model's total
log-probabilities, softened by ``TEMPERATURE``, weigh the candidates, and the answer is the candidate that
overlaps that weighted field most (minimum-Bayes-risk choice under word-overlap F1): where the model hesitates
between "Suleiman" and "Suleiman the Magnificent", the answer both share wins.

Only a backend that can score continuations cheaply does this (the embedded one: one forward over the prompt,
the candidates batched on its KV cache); otherwise, when the scorer fails, or for a language other than
English (the prompt is English), the rules' own best span stays. Chosen on the dev split of squad-answers
(docs/decisions/0390-model-scored-short-answers.md, 0415-whole-phrases-and-examples-for-short-answers.md).
"""

from __future__ import annotations

import logging
import math
import string
import threading
from collections import Counter
from collections.abc import Sequence

from geri.answering.phrases import whole_phrases
from geri.answering.spans import scored_spans
from geri.backends.base import ContinuationScorer
from wolf_service.errors import Cancelled, ServiceError

log = logging.getLogger("geri.answering")

MODEL_CANDIDATES = 5
WHOLE_PHRASES = 2
TEMPERATURE = 2.0
# Made up, not from any evaluation set: a year, a noun phrase, a name, each copied from its sentence.
EXAMPLES = ("The Eiffel Tower was completed in 1889 for the World's Fair in Paris.\nQuestion: When was the Eiffel "
            "Tower completed?\nAnswer: 1889\n\nPhotosynthesis converts light energy into chemical energy stored in "
            "glucose.\nQuestion: What does photosynthesis turn light into?\nAnswer: chemical energy\n\nThe bridge "
            "was designed by the engineer Gustave Eiffel and opened by Queen Victoria.\nQuestion: Who designed the "
            "bridge?\nAnswer: Gustave Eiffel\n\n")
# Longer text is cut from the prompt: the sentence as the model was shown it, a question of normal length.
MAX_SENTENCE_CHARS = 600
MAX_QUESTION_CHARS = 600
MAX_CANDIDATE_CHARS = 200
_PUNCTUATION = string.punctuation + "“”‘’«»"


def model_prompt(question: str, sentence: str, examples: bool = True) -> str:
    """The plain-text prompt a candidate span continues (after a space); ``examples`` first when asked."""
    asked = f"{sentence[:MAX_SENTENCE_CHARS]}\nQuestion: {question[:MAX_QUESTION_CHARS]}\nAnswer:"
    return EXAMPLES + asked if examples else asked


def _words(text: str) -> list[str]:
    return [w for w in (t.strip(_PUNCTUATION).lower() for t in text.split()) if w]


def overlap(a: str, b: str) -> float:
    """Word-overlap F1 of two spans (lower case, punctuation stripped; 0 when either has no word)."""
    left, right = _words(a), _words(b)
    common = sum((Counter(left) & Counter(right)).values())
    if not common:
        return 0.0
    precision, recall = common / len(left), common / len(right)
    return 2 * precision * recall / (precision + recall)


def consensus(candidates: Sequence[str], log_probs: Sequence[Sequence[float]],
              temperature: float = TEMPERATURE) -> str:
    """The scored candidate with the highest expected overlap with the others, each weighted by
    ``exp(total log-probability / temperature)`` (the earlier one on a tie; unscored ones never). ""
    when none was scored."""
    scored = [(c, sum(lp)) for c, lp in zip(candidates, log_probs, strict=True) if lp]
    if not scored:
        return ""
    top = max(total for _, total in scored)
    weights = [math.exp((total - top) / temperature) for _, total in scored]
    best, best_gain = "", -math.inf
    for candidate, _ in scored:
        gain = sum(w * overlap(candidate, other) for w, (other, _) in zip(weights, scored, strict=True))
        if gain > best_gain:
            best, best_gain = candidate, gain
    return best


def candidate_pool(sentence: str, ranked_spans: Sequence[str], language: str = "en",
                   size: int = MODEL_CANDIDATES, phrases: int = WHOLE_PHRASES) -> list[str]:
    """The ``size`` spans the model scores: the first ``phrases`` of ``ranked_spans`` (the rules' order) that
    are whole phrases of ``sentence``, then the rules' best others, in the rules' order within each part."""
    whole = set(whole_phrases(sentence, language)) if phrases else set()
    first = [span for span in ranked_spans if span in whole][:phrases]
    return (first + [span for span in ranked_spans if span not in first])[:size]


def model_span(question: str, sentence: str, scorer: ContinuationScorer, language: str = "en",
               candidates: int = MODEL_CANDIDATES, ranked_spans: Sequence[str] | None = None,
               cancel: threading.Event | None = None) -> str:
    """The span of ``sentence`` answering ``question``: among ``candidates`` spans (:func:`candidate_pool`), the
    one the model's weighted candidates agree on most; the rules' best when the model cannot tell (see the
    module docstring). "" when the sentence has no span. ``ranked_spans``: the sentence's spans as the rules
    rank them, when the caller has them already; ``cancel``: set when the caller has gone.

    Raises:
        Cancelled: ``cancel`` was set while the scoring waited for the model.
    """
    if ranked_spans is None:
        ranked_spans = [span for span, _ in scored_spans(question, sentence, language)]
    ranked = list(ranked_spans)
    if language != "en" or len(ranked) < 2:
        return ranked[0] if ranked else ""
    fitting = [span for span in candidate_pool(sentence, ranked, language, candidates)
               if len(span) <= MAX_CANDIDATE_CHARS]
    if len(fitting) < 2:
        return ranked[0]
    try:
        log_probs = scorer.score_continuations(model_prompt(question, sentence), [f" {s}" for s in fitting],
                                               shared_prefix=EXAMPLES, cancel=cancel)
    except Cancelled:
        raise  # the caller has gone: an answer with the rules' span must not be stored or cached as its own
    except (ServiceError, RuntimeError, ValueError) as exc:  # the rules' answer is still a good one
        log.warning("scoring the short answer's candidates failed (%s): the span rules choose", exc)
        return ranked[0]
    return consensus(fitting, log_probs) or ranked[0]
