"""The count caches the chunker uses on re-index: same counts as the counter, each text counted once."""

from __future__ import annotations

from freki.ingest.caches import TokenCountCache
from wolf_service.tokens import get_token_counter


class CountingCounter:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self._real = get_token_counter()

    def count(self, text: str) -> int:
        self.calls.append(text)
        return self._real.count(text)


def test_cached_counter_counts_like_tiktoken_and_counts_each_text_once() -> None:
    inner = CountingCounter()
    cached = TokenCountCache(inner.count)
    texts = ["The relay listens on port 9427.", "Ein kurzer Satz.", "The relay listens on port 9427.", ""]
    assert [cached.count(t) for t in texts] == [get_token_counter().count(t) for t in texts]
    assert inner.calls == ["The relay listens on port 9427.", "Ein kurzer Satz.", ""]


def test_token_count_cache_evicts_the_least_recently_used() -> None:
    calls: list[str] = []
    cache = TokenCountCache(lambda t: calls.append(t) or len(t), max_entries=2)
    for text in ("a", "bb", "a", "ccc", "bb", "a"):
        cache(text)
    # "a" was used after "bb", so "ccc" evicts "bb"; counting "bb" again then evicts "a".
    assert calls == ["a", "bb", "ccc", "bb", "a"]
