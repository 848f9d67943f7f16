"""Cut generated text at the first stop sequence, even when it arrives split across chunks.

Ollama applies ``stop`` itself; the embedded backend streams decoded text, so it holds back a
tail that could still become a stop sequence and ends the answer right before one.
"""

from __future__ import annotations

from collections.abc import Sequence


class StopScanner:
    """Feed text chunks; get back the text that is safe to emit and whether a stop sequence was hit."""

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = [s for s in stops if s]
        self._held = ""

    def feed(self, chunk: str) -> tuple[str, bool]:
        """Return ``(text to emit, stopped)``; after ``stopped`` is True, further output is discarded."""
        if not self._stops:
            return chunk, False
        buffer = self._held + chunk
        hits = [i for i in (buffer.find(s) for s in self._stops) if i >= 0]
        if hits:
            self._held = ""
            return buffer[: min(hits)], True
        keep = max((self._partial_suffix(buffer, s) for s in self._stops), default=0)
        self._held = buffer[len(buffer) - keep :]
        return buffer[: len(buffer) - keep], False

    def flush(self) -> str:
        """End of output: what was held back was not a stop sequence after all."""
        held, self._held = self._held, ""
        return held

    @staticmethod
    def _partial_suffix(buffer: str, stop: str) -> int:
        for size in range(min(len(buffer), len(stop) - 1), 0, -1):
            if stop.startswith(buffer[-size:]):
                return size
        return 0
