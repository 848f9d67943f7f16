"""Prompt-size estimates for models whose tokenizer Geri does not have (Ollama models).

Counts with cl100k_base through the shared offline tiktoken loader (``wolf_service.tokens``)
and scales by a safety margin, since the model's own tokenizer may split text finer.
"""

from __future__ import annotations

import math

from geri.backends.chat_markers import remote_markers
from wolf_service.tokens import get_token_counter

# A marker is sent broken by a zero-width space, three UTF-8 bytes: a byte-level tokenizer may spend one token
# on each, and cl100k counts the space as one.
BREAK_TOKENS = 3


def estimate_tokens(text: str, margin: float) -> int:
    """Estimated tokens of ``text`` for an unknown tokenizer: cl100k count times ``margin``, rounded up."""
    if not text:
        return 0
    return math.ceil(get_token_counter().count(text) * margin)


def estimate_sent_tokens(text: str, margin: float) -> int:
    """Estimated tokens of ``text`` as a remote backend sends it, its chat-template markers broken
    (geri/backends/chat_markers.py): each break counts ``BREAK_TOKENS`` more."""
    return estimate_tokens(text, margin) + math.ceil(BREAK_TOKENS * remote_markers(text) * margin)
