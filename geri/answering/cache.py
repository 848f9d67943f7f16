"""A bounded per-tenant cache of grounded answers, so that a repeated question skips the generation.

The key is a SHA-256 over everything the answer depends on, with the tenant first:

- the tenant (the API key's: the auth interceptor pins ``tenant_id``), so no tenant can reach another's entry;
- the user (``x-wolf-user``), so that a hit never tells one user what another asked;
- the question, normalised (Unicode NFKC, case-folded, whitespace collapsed, trailing ``?!.`` dropped);
- the model asked for, the answer policy (options over the settings), the answering settings, and the
  generation parameters a caller may set (max_tokens, temperature, top_p, seed, language);
- the context's identity: its ``index_epoch`` and, of each source shown to the model, the chunk id,
  document id, score, source, location, metadata (``context_metadata`` may put it in the prompt) and a
  digest of its text;
- the conversation the model sees: the session's stored turns and the request's messages.

The epoch makes every write to the tenant's index (Freki moves it on) miss the old entries, and the first
request with a newer epoch than any seen for the tenant drops the tenant's older entries (text of a deleted
or erased document does not linger in the cache). The text digest makes the cache safe against a forged
epoch or forged chunk ids: a caller who sends a context gets the answer to that context, never an answer
computed for other text; the worst a forged epoch does is miss, or empty its own tenant's entries once.
Freki's epochs are microseconds of the wall clock at its start plus its writes, so never ahead of the clock:
an epoch further ahead than ``FUTURE_EPOCH_US`` (room for clock skew between hosts) is forged, and such a
request bypasses the cache. Otherwise one caller could send the largest epoch and make every real one
"older", so that no answer of its tenant were kept again.
Entries expire after ``ttl_s`` and the least recently used go past ``max_entries``. Both change live
(``configure``, on a settings reload): a smaller bound evicts at once, 0 drops every entry.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from wolf.v1 import common_pb2, geri_pb2

from geri.settings import AnswerCacheSettings

_SPACE = re.compile(r"\s+")
FUTURE_EPOCH_US = 24 * 3600 * 10**6  # clock skew between Freki's and Geri's hosts that is still believed


def normalised_question(text: str) -> str:
    """The question as the cache compares it: NFKC, case-folded, single spaces, no trailing ``?!.``."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip().rstrip("?!. ")


def answer_key(*, tenant: str, user: str, request: common_pb2.WolfRequest, policy: object, settings_json: str,
               shown: Sequence[common_pb2.RetrievedDocument], history: Sequence[object]) -> str:
    """The cache key of a grounded answer (hex SHA-256); see the module docstring for what it holds."""
    digest = hashlib.sha256()

    def part(value: object) -> None:
        data = str(value).encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))  # length-prefixed: no two part lists hash alike
        digest.update(data)

    meta, gen = request.metadata, request.generation
    for value in (tenant, user, normalised_question(request.prompt), gen.model, repr(policy), settings_json,
                  meta.max_tokens if meta.HasField("max_tokens") else "",
                  meta.temperature if meta.HasField("temperature") else "",
                  gen.top_p if gen.HasField("top_p") else "", gen.seed if gen.HasField("seed") else "",
                  meta.language, request.context.index_epoch, len(shown)):
        part(value)
    for doc in shown:
        for value in (doc.chunk_id, doc.document_id, doc.relevance_score, doc.source,
                      doc.location.SerializeToString(deterministic=True), sorted(doc.metadata.items()),
                      hashlib.sha256(doc.content.encode("utf-8", "surrogatepass")).hexdigest()):
            part(value)
    part(len(history))
    for turn in history:
        part(repr(turn))
    return digest.hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    """What a hit serves: the checked answer, the generation behind it, the fallbacks that made it."""

    answer: bytes
    llm_response: bytes
    fallbacks: tuple[bytes, ...]
    stored_at: float
    epoch: int
    shown: tuple[str, ...] = ()  # ids of the documents the model saw (after the window fitting)

    def response(self) -> tuple[geri_pb2.GroundedAnswer, common_pb2.LLMResponse, list[geri_pb2.Fallback]]:
        """Fresh copies of the stored messages."""
        return (geri_pb2.GroundedAnswer.FromString(self.answer), common_pb2.LLMResponse.FromString(self.llm_response),
                [geri_pb2.Fallback.FromString(f) for f in self.fallbacks])


class AnswerCache:
    """Thread-safe LRU of grounded answers with a time to live; ``max_entries`` 0 turns it off."""

    def __init__(self, settings: AnswerCacheSettings, clock: object = time.monotonic) -> None:
        self.max_entries = settings.max_entries
        self.ttl_s = settings.ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], CachedAnswer] = OrderedDict()
        self._newest: OrderedDict[str, int] = OrderedDict()  # per tenant: the newest index epoch seen
        self.hits = 0
        self.misses = 0

    def configure(self, settings: AnswerCacheSettings) -> int:
        """Apply reloaded ``answer_cache`` settings now; how many entries went. A smaller ``max_entries``
        evicts the least recently used at once, 0 drops every entry (an operator turning the cache off
        expects no answer of it kept in memory), a shorter ``ttl_s`` drops the entries already older."""
        with self._lock:
            before = len(self._entries)
            self.max_entries, self.ttl_s = settings.max_entries, settings.ttl_s
            if not self.enabled:
                self._entries.clear()
                self._newest.clear()
            now = self._now()
            for key in [k for k, v in self._entries.items() if now - v.stored_at > self.ttl_s]:
                del self._entries[key]
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            while len(self._newest) > 2 * self.max_entries:
                self._newest.popitem(last=False)
            return before - len(self._entries)

    @property
    def enabled(self) -> bool:
        """Whether answers are cached at all."""
        return self.max_entries > 0

    def get(self, tenant: str, epoch: int, key: str) -> CachedAnswer | None:
        """The live entry for ``key`` in ``tenant``, or None (counted as a miss). An ``epoch`` newer than any
        seen for ``tenant`` drops the tenant's entries of older epochs first."""
        if not self.enabled:
            return None
        if _forged(epoch):
            self.misses += 1
            return None
        now = self._now()
        with self._lock:
            self._see_epoch(tenant, epoch)
            found = self._entries.get((tenant, key))
            if found is not None and now - found.stored_at > self.ttl_s:
                del self._entries[(tenant, key)]
                found = None
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end((tenant, key))
            self.hits += 1
            return found

    def put(self, tenant: str, epoch: int, key: str, answer: geri_pb2.GroundedAnswer, llm: common_pb2.LLMResponse,
            fallbacks: Sequence[geri_pb2.Fallback], shown: Sequence[str] = ()) -> None:
        """Store an answer (the least recently used entry goes when full); not when a newer epoch of the
        tenant was seen meanwhile (the answer was made from an index that has changed since)."""
        if not self.enabled or _forged(epoch):
            return
        entry = CachedAnswer(answer.SerializeToString(), llm.SerializeToString(),
                             tuple(f.SerializeToString() for f in fallbacks), self._now(), epoch, tuple(shown))
        with self._lock:
            if epoch < self._newest.get(tenant, 0):
                return
            self._entries[(tenant, key)] = entry
            self._entries.move_to_end((tenant, key))
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def drop_tenant(self, tenant: str) -> int:
        """Forget every answer of ``tenant`` (e.g. its data owner was erased); how many went."""
        with self._lock:
            keys = [k for k in self._entries if k[0] == tenant]
            for key in keys:
                del self._entries[key]
        return len(keys)

    def _see_epoch(self, tenant: str, epoch: int) -> None:
        if epoch <= self._newest.get(tenant, 0):
            return
        self._newest[tenant] = epoch
        self._newest.move_to_end(tenant)
        while len(self._newest) > 2 * self.max_entries:  # tenants without entries need no memory of epochs
            self._newest.popitem(last=False)
        for key in [k for k, v in self._entries.items() if k[0] == tenant and v.epoch < epoch]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def _now(self) -> float:
        return float(self._clock())  # type: ignore[operator]


def _forged(epoch: int) -> bool:
    """Whether ``epoch`` lies further ahead of the wall clock than any Freki epoch can (see the docstring)."""
    return epoch > time.time_ns() // 1000 + FUTURE_EPOCH_US
