"""Separate a reasoning model's ``<think>…</think>`` text from its answer, also while streaming.

Tags may arrive split across chunks (``"<thi"`` + ``"nk>"``), so the splitter holds back any
tail that could still become a tag and releases it once the next chunk decides. Whitespace a
model puts between ``</think>`` and the start of its answer (deepseek-r1 emits blank lines) is
not part of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

PieceKind = Literal["text", "thinking"]


@dataclass(frozen=True)
class Piece:
    """A run of answer text or of reasoning text."""

    kind: PieceKind
    content: str


def _partial_tag_suffix(buffer: str, tag: str) -> int:
    """Length of the longest suffix of ``buffer`` that is a proper prefix of ``tag``."""
    for size in range(min(len(buffer), len(tag) - 1), 0, -1):
        if tag.startswith(buffer[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Incremental splitter: :meth:`feed` chunks as they come, then :meth:`flush` at the end."""

    def __init__(self) -> None:
        self._buffer = ""
        self._in_think = False
        self._strip_leading_ws = False  # after </think>, while no answer text was emitted yet
        self._text_started = False

    def feed(self, chunk: str) -> list[Piece]:
        """Consume ``chunk``; return the pieces that are now certain (possibly none)."""
        self._buffer += chunk
        pieces: list[Piece] = []
        while self._buffer:
            tag = CLOSE_TAG if self._in_think else OPEN_TAG
            at = self._buffer.find(tag)
            if at >= 0:
                self._emit(pieces, self._buffer[:at])
                self._buffer = self._buffer[at + len(tag) :]
                self._in_think = not self._in_think
                if not self._in_think and not self._text_started:
                    self._strip_leading_ws = True
                continue
            keep = _partial_tag_suffix(self._buffer, tag)
            ready = self._buffer[: len(self._buffer) - keep]
            self._buffer = self._buffer[len(self._buffer) - keep :]
            self._emit(pieces, ready)
            break
        return pieces

    def flush(self) -> list[Piece]:
        """End of stream: release what was held back (an unfinished tag is plain content)."""
        pieces: list[Piece] = []
        self._emit(pieces, self._buffer)
        self._buffer = ""
        return pieces

    def _emit(self, pieces: list[Piece], content: str) -> None:
        if not content:
            return
        if self._in_think:
            pieces.append(Piece("thinking", content))
            return
        if self._strip_leading_ws:
            content = content.lstrip()
            if not content:
                return
            self._strip_leading_ws = False
        self._text_started = True
        pieces.append(Piece("text", content))


def split_thinking(text: str) -> tuple[str, str]:
    """Split a complete output into ``(answer, thinking)``.

    Args:
        text: Model output that may contain ``<think>…</think>`` blocks.

    Returns:
        The answer without the blocks, and the concatenated reasoning.
    """
    splitter = ThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    answer = "".join(p.content for p in pieces if p.kind == "text")
    thinking = "".join(p.content for p in pieces if p.kind == "thinking")
    return answer, thinking
