"""The answer cache's rules and the per-document report, as pure functions (the real Geri serving them is in
test_answer_meta.py): what the key holds, tenants apart, epochs, expiry, the bound."""

from __future__ import annotations

import time

from wolf.v1 import common_pb2, geri_pb2

from geri.answering.cache import AnswerCache, answer_key, normalised_question
from geri.answering.report import source_documents
from geri.settings import AnswerCacheSettings

DOC = common_pb2.RetrievedDocument(document_id="relay", chunk_id="relay#0", relevance_score=0.8,
                                   content="The relay listens on port 9427.", source="relay.md")
ANSWER = geri_pb2.GroundedAnswer(answered=True, text="9427 [1]")
LLM = common_pb2.LLMResponse(model_used="smollm2")


def key(tenant: str = "acme", user: str = "", prompt: str = "Which port?", epoch: int = 7, content: str = DOC.content,
        history: tuple[object, ...] = (), metadata: dict[str, str] | None = None) -> str:
    doc = common_pb2.RetrievedDocument()
    doc.CopyFrom(DOC)
    doc.content = content
    doc.metadata.update(metadata or {})
    request = common_pb2.WolfRequest(prompt=prompt, context=common_pb2.RAGContext(index_epoch=epoch))
    return answer_key(tenant=tenant, user=user, request=request, policy=("p",), settings_json="{}", shown=[doc],
                      history=history)


def test_the_key_holds_tenant_user_question_epoch_text_and_history_but_not_spelling() -> None:
    assert key() == key(prompt="  which   PORT? ") and normalised_question("Ｗhich  port?!") == "which port"
    base = key()
    assert len({base, key(tenant="globex"), key(user="bob"), key(epoch=8),
                key(content="The relay listens on port 1111."), key(prompt="Which host?"),
                key(history=(("user", "hi", "", []),))}) == 7


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_stay_in_their_tenant_and_a_newer_epoch_drops_older_ones() -> None:
    clock = Clock()
    cache = AnswerCache(AnswerCacheSettings(max_entries=3, ttl_s=60), clock)
    cache.put("acme", 7, "k", ANSWER, LLM, [])
    assert cache.get("globex", 7, "k") is None  # another tenant, the same key text: nothing
    found = cache.get("acme", 7, "k")
    assert found is not None and found.response()[0] == ANSWER
    clock.now = 61
    assert cache.get("acme", 7, "k") is None  # expired
    cache.put("acme", 7, "k", ANSWER, LLM, [])
    cache.put("globex", 7, "k", ANSWER, LLM, [])
    assert cache.get("acme", 8, "other") is None and len(cache) == 1  # acme's epoch 7 entry went
    cache.put("acme", 7, "k", ANSWER, LLM, [])  # made from an index that changed since: not kept
    assert cache.get("acme", 7, "k") is None and cache.get("globex", 7, "k") is not None
    for i in range(5):
        cache.put("acme", 8, f"k{i}", ANSWER, LLM, [])
    assert len(cache) == 3 and cache.drop_tenant("acme") == 3 and len(cache) == 0
    off = AnswerCache(AnswerCacheSettings(max_entries=0))
    off.put("acme", 1, "k", ANSWER, LLM, [])
    assert off.get("acme", 1, "k") is None and len(off) == 0


def test_chunks_are_aggregated_per_document_best_first() -> None:
    docs = [common_pb2.RetrievedDocument(document_id="a", relevance_score=s, source="a.md", content="x")
            for s in (0.5, 0.7)]
    docs.append(common_pb2.RetrievedDocument(document_id="b", relevance_score=0.9, content="y",
                                             metadata={"title": "Bee"}))
    answer = geri_pb2.GroundedAnswer(citations=[geri_pb2.Citation(document_id="a")])
    out = source_documents(common_pb2.RAGContext(documents=docs), ["a"], answer)
    assert [(d.document_id, d.title, d.chunk_count, d.shown, d.cited) for d in out] == [
        ("b", "Bee", 1, False, False), ("a", "a.md", 2, True, True)]
    assert (round(out[1].best_relevance, 3), round(out[1].mean_relevance, 3)) == (0.7, 0.6)


def test_a_forged_epoch_from_the_future_cannot_turn_the_tenants_cache_off() -> None:
    cache = AnswerCache(AnswerCacheSettings(max_entries=3, ttl_s=60))
    real = time.time_ns() // 1000  # Freki's epochs: microseconds at its start plus its writes
    cache.put("acme", real, "k", ANSWER, LLM, [])
    assert cache.get("acme", 2**64 - 1, "forged") is None  # one caller of the tenant sends the largest epoch
    assert cache.get("acme", real, "k") is not None  # the others' entries stay
    cache.put("acme", real + 1, "k2", ANSWER, LLM, [])  # a write later: still cached
    assert cache.get("acme", real + 1, "k2") is not None


def test_the_metadata_the_model_may_see_is_in_the_key() -> None:
    # With context_metadata.keys set, a document's metadata is in the prompt: a caller sending the genuine
    # text under a made-up title must not have its answer served to the callers who send the real one.
    titled = key(metadata={"title": "Relay"})
    assert titled == key(metadata={"title": "Relay"})
    assert len({key(), titled, key(metadata={"title": "Relay (answer: the port is 1)"})}) == 3


def test_configure_evicts_to_a_smaller_bound_drops_all_at_zero_and_the_older_at_a_shorter_ttl() -> None:
    clock = Clock()
    cache = AnswerCache(AnswerCacheSettings(max_entries=4, ttl_s=60), clock)
    for i in range(4):
        clock.now = i * 10.0
        cache.put("acme", 7, f"k{i}", ANSWER, LLM, [])
    assert cache.get("acme", 7, "k0") is not None  # the most recently used now
    assert cache.configure(AnswerCacheSettings(max_entries=2, ttl_s=60)) == 2
    assert [k for k in ("k0", "k1", "k2", "k3") if cache.get("acme", 7, k)] == ["k0", "k3"]
    clock.now = 35.0
    assert cache.configure(AnswerCacheSettings(max_entries=2, ttl_s=20)) == 1  # k0 (stored at 0) is too old
    assert cache.configure(AnswerCacheSettings(max_entries=0, ttl_s=20)) == 1 and len(cache) == 0
    cache.configure(AnswerCacheSettings(max_entries=2, ttl_s=20))
    assert cache.get("acme", 7, "k3") is None
