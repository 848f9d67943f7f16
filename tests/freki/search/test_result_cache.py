"""The result cache: byte budget, per-tenant invalidation, races with writes; and on the real engine."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.result_cache import ResultCache
from freki.search.retrieval import Query
from tests.freki.conftest import freki_settings


def size(hit: str) -> int:
    return len(hit)


def test_repeated_queries_are_served_from_the_cache_until_the_tenant_changes() -> None:
    cache, computed = ResultCache(10_000), []

    def compute(text: str) -> list[str]:
        computed.append(text)
        return [text.upper()]

    assert cache.lookup("t1", "q", lambda: compute("q"), size) == ["Q"]
    assert cache.lookup("t1", "q", lambda: compute("q"), size) == ["Q"]
    assert cache.lookup("t2", "q", lambda: compute("q"), size) == ["Q"]  # another tenant, another entry
    assert computed == ["q", "q"] and (cache.hits, cache.misses) == (1, 2)
    cache.invalidate("t1")
    cache.lookup("t1", "q", lambda: compute("q"), size)
    cache.lookup("t2", "q", lambda: compute("q"), size)
    assert computed == ["q", "q", "q"]  # t1 recomputed, t2 still cached


def test_the_byte_budget_evicts_least_recently_used_and_refuses_what_cannot_fit() -> None:
    cache = ResultCache(100)
    for key in ("a", "b", "c"):
        cache.lookup("t", key, lambda k=key: [k * 30], size)  # 31 bytes each with the key
    assert cache.bytes <= 100
    cache.lookup("t", "a", lambda: ["a" * 30], size)  # a is the most recent now
    cache.lookup("t", "d", lambda: ["d" * 30], size)  # evicts b, the least recently used
    misses = cache.misses
    cache.lookup("t", "a", lambda: ["x"], size)
    assert cache.misses == misses
    cache.lookup("t", "b", lambda: ["b" * 30], size)
    assert cache.misses == misses + 1
    cache.lookup("t", "huge", lambda: ["h" * 1000], size)
    assert cache.bytes <= 100 and ("t", 0, "huge") not in cache._entries


def test_a_result_computed_across_a_write_is_not_kept() -> None:
    cache, started, release = ResultCache(10_000), threading.Event(), threading.Event()

    def slow() -> list[str]:
        started.set()
        release.wait(5)
        return ["old"]

    worker = threading.Thread(target=cache.lookup, args=("t", "q", slow, size))
    worker.start()
    assert started.wait(5)
    cache.invalidate("t")  # a write lands while the query runs
    release.set()
    worker.join(5)
    assert cache.lookup("t", "q", lambda: ["new"], size) == ["new"]


def test_zero_bytes_turns_it_off() -> None:
    cache, calls = ResultCache(0), []
    for _ in range(2):
        cache.lookup("t", "q", lambda: calls.append(1) or ["r"], size)
    assert len(calls) == 2 and cache.hits == 0


@pytest.mark.integration
def test_on_the_real_engine_every_kind_of_write_drops_the_tenants_results(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(freki_settings(tmp_path), embedder=embedder)
    try:
        def ask(tenant: str = "default") -> list[str]:
            query = Query(tenant_id=tenant, text="lighthouse keeper lamp oil", top_k=5, score_threshold=0.0,
                          mode="hybrid")
            return [h.document_id for h in engine.retrieve(query)]

        engine.index(IndexInput("default", "a.md", "The lighthouse keeper trims the lamp and pours oil."))
        engine.index(IndexInput("other", "b.md", "The lighthouse keeper of the other tenant."))
        assert ask() == ["a.md"] and ask() == ["a.md"]
        assert engine.results.hits == 1
        engine.index(IndexInput("default", "c.md", "A lighthouse lamp burns whale oil all night."))
        assert sorted(ask()) == ["a.md", "c.md"]
        hits = engine.results.hits
        assert ask("other") == ["b.md"] and ask("other") == ["b.md"] and engine.results.hits == hits + 1
        engine.delete_document("default", "c.md")
        assert ask() == ["a.md"]
        engine.full_reindex("default")
        misses = engine.results.misses
        ask()
        assert engine.results.misses == misses + 1
        engine.delete_owner("default", "default", list(engine.registry.iterate("default")))
        assert ask() == []
        assert ask("other") == ["b.md"]  # untouched by the other tenant's writes
    finally:
        engine.close()
