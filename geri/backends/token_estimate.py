"""Prompt-size estimates for models whose tokenizer Geri does not have (Ollama models).

Counts with cl100k_base through the shared offline tiktoken loader (``wolf_service.tokens``)
and scales by a safety margin, since the model's own tokenizer may split text finer.
"""

from __future__ import annotations

import math

from wolf_service.tokens import get_token_counter


def estimate_tokens(text: str, margin: float) -> int:
    """Estimated tokens of ``text`` for an unknown tokenizer: cl100k count times ``margin``, rounded up."""
    if not text:
        return 0
    return math.ceil(get_token_counter().count(text) * margin)
