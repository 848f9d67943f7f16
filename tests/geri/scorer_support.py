"""A continuation scorer stand-in at the backend seam (``ContinuationScorer``), for unit tests of what the
answering rules ask of the model; the same calls with the real embedded model are in test_answer_rpc.py."""

from __future__ import annotations

from collections.abc import Sequence


class RecordingScorer:
    """Records each call's prompt, continuations and shared prefix; raises ``error`` when one is given, else
    answers :meth:`scores` for each continuation."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[tuple[str, list[str]]] = []
        self.shared: list[str] = []

    @property
    def prompts(self) -> list[str]:
        """The prompts asked about, in order."""
        return [prompt for prompt, _ in self.calls]

    def score_continuations(self, prompt: str, continuations: Sequence[str], shared_prefix: str = "",
                            cancel: object = None) -> list[list[float]]:
        assert prompt.startswith(shared_prefix)
        self.calls.append((prompt, list(continuations)))
        self.shared.append(shared_prefix)
        if self.error is not None:
            raise self.error
        return [self.scores(prompt, continuation) for continuation in continuations]

    def scores(self, prompt: str, continuation: str) -> list[float]:
        """The log-probability of each token (here: word) of ``continuation`` after ``prompt``."""
        raise NotImplementedError
