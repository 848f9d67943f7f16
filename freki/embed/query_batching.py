"""Micro-batching of concurrent embedding calls (queries and indexed passages alike).

One forward pass over 32 short texts costs little more than a pass over one, and the model can
only run one pass at a time anyway (``Embedder`` serialises encoding). So the calls that arrive
while a pass is running are gathered and encoded together in the next pass: 64 clients each
embedding one query share a couple of passes, and concurrent IndexDocument calls share passes
over their chunks. Nobody waits for company when the model is idle (``max_wait_s`` = 0, the
default), so a lone caller's latency is unchanged. With ``max_wait_s`` > 0 a leader waits that long
for company only when the last pass was shared or others are already queued: never for a caller
that is alone.

There is no background thread: whichever caller finds the model free becomes the *leader*, takes
pending calls up to ``max_batch`` texts (always at least one call, however large), encodes them
in one pass, hands every waiter its rows and steps down, handing the lead to the next caller still
waiting. Each waiter sleeps on its own event and is woken once, when its rows are ready or when it
is to lead: one shared condition with ``notify_all`` would wake every waiter on every pass only for
most to find nothing to do, each wake-up a thread switch and a GIL hand-off
(docs/decisions/0007-query-micro-batching.md).

Queries jump the queue: a call made with ``urgent=True`` (``Embedder.embed_query``) is taken
before every waiting indexing call, and a pass that carries urgent calls carries nothing else,
so a query waits for at most the one pass already running, never for the indexing backlog.
Indexing passes are small (``pass_texts``): an indexing call with more texts is cut into slices taken
one pass at a time, so that a query never waits behind a whole document's chunks in one pass. Between
tenants, indexing work is shared round robin: each pass starts with the tenant after the one that
started the last, and a tenant takes at most its share of a pass, so one tenant's backlog of queued
calls does not hold another tenant's document (docs/decisions/0301).

A text that makes the encoder raise fails only its own call: when a shared pass fails, each of its calls
is encoded again on its own (a hostile text among 64 clients' queries must not fail the other 63).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from wolf_service.errors import DeadlineExceeded, Unavailable

log = logging.getLogger("freki.embedding")


@dataclass
class _Pending:
    texts: list[str]
    urgent: bool = False
    tenant: str = ""
    taken: int = 0  # texts handed to passes so far (an indexing call may span several passes)
    parts: list[np.ndarray] = field(default_factory=list)  # its slices' vectors, in order
    vectors: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False
    lead: bool = False  # handed the lead by the previous leader: run the next pass
    wake: threading.Event = field(default_factory=threading.Event)

    @property
    def left(self) -> int:
        return len(self.texts) - self.taken


# One pass's share of a call: the call and the [start, stop) range of its texts.
_Slice = tuple[_Pending, int, int]


class QueryBatcher:
    """Encodes texts, merging calls that arrive concurrently into shared passes. Thread-safe."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], *, max_batch: int = 64,
                 max_wait_s: float = 0.0, pass_texts: int | None = None) -> None:
        """``max_batch``: texts of urgent calls per pass (at least one whole call). ``pass_texts``: texts of
        indexing work per pass (calls are cut into slices; default ``max_batch``)."""
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1 (got {max_batch})")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0 (got {max_wait_s})")
        if pass_texts is not None and pass_texts < 1:
            raise ValueError(f"pass_texts must be >= 1 (got {pass_texts})")
        self._encode = encode
        self._max_batch = max_batch
        self._pass_texts = pass_texts or max_batch
        self._last_tenant: str | None = None  # the tenant that started the last indexing pass
        self._max_wait = max_wait_s
        # Guards the queue and the lead; a leader gathering company (max_wait_s) waits on it for arrivals.
        self._cond = threading.Condition()
        self._pending: list[_Pending] = []
        self._busy = False
        self._gathering = False
        # Whether the last pass served more than one call: a caller that is alone does not wait for company.
        self._shared = True
        self.batches = 0
        self.texts = 0

    @property
    def settings(self) -> tuple[int, float, int]:
        """``(max_batch, max_wait_s, pass_texts)`` as constructed."""
        return self._max_batch, self._max_wait, self._pass_texts

    def encode(self, text: str) -> np.ndarray:
        """The embedding of one text."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str], *, urgent: bool = False, tenant: str = "") -> np.ndarray:
        """Embeddings of ``texts`` as an ``(n, dim)`` array, computed in whatever passes they land in.

        ``urgent`` calls (queries someone is waiting on) go into the next pass ahead of the rest; other
        calls share passes round robin by ``tenant``.
        """
        mine = _Pending(list(texts), urgent, tenant)
        with self._cond:
            self._pending.append(mine)
            leading = not self._busy
            self._busy = True
            if self._gathering:
                self._cond.notify()  # the leader gathering company wants to know
        while True:
            if not leading:
                mine.wake.wait()
                with self._cond:
                    mine.wake.clear()
                    if mine.done:
                        break
                    assert mine.lead, "woken without a result or the lead"
                    mine.lead = False
            if self._max_wait and self._company_likely():
                self._gather()
            self._run(self._take())
            with self._cond:
                if mine.done:
                    self._hand_over()
                    break
            leading = True  # its own call (or the rest of it) is still queued: lead the next pass too
        if mine.error is not None:
            raise mine.error
        assert mine.vectors is not None
        return mine.vectors

    def _hand_over(self) -> None:
        """The leader's own call is done: wake the next waiter to lead, or leave the model free. Holds _cond."""
        if not self._pending:
            self._busy = False
            return
        nxt = next((p for p in self._pending if p.urgent), self._pending[0])
        nxt.lead = True
        nxt.wake.set()

    def _take(self) -> list[_Slice]:
        with self._cond:
            urgent = [p for p in self._pending if p.urgent]
            batch = self._take_urgent(urgent) if urgent else self._take_fair()
            for p, _, stop in batch:
                p.taken = stop
            self._pending = [p for p in self._pending if p.left > 0]
            return batch

    def _take_urgent(self, urgent: list[_Pending]) -> list[_Slice]:
        """Whole urgent calls, oldest first, up to ``max_batch`` texts (always at least one call)."""
        batch: list[_Slice] = []
        total = 0
        for p in urgent:
            if batch and total + len(p.texts) > self._max_batch:
                break
            batch.append((p, 0, len(p.texts)))
            total += len(p.texts)
        return batch

    def _take_fair(self) -> list[_Slice]:
        """Up to ``pass_texts`` texts of indexing work, tenants in turn: the pass starts with the tenant after
        the one that started the last, and each tenant takes at most an equal share while others wait."""
        queues: dict[str, list[_Pending]] = {}
        for p in self._pending:
            queues.setdefault(p.tenant, []).append(p)
        order = list(queues)
        if self._last_tenant in queues:
            after = order.index(self._last_tenant) + 1
            order = order[after:] + order[:after]
        self._last_tenant = order[0]
        room = self._pass_texts
        share = max(1, room // len(order))
        batch: list[_Slice] = []
        offsets = {id(p): p.taken for p in self._pending}
        while room > 0 and order:
            for tenant in list(order):
                quota = min(share, room)
                queue = queues[tenant]
                while quota > 0 and queue:
                    p = queue[0]
                    start = offsets[id(p)]
                    n = min(quota, len(p.texts) - start)
                    batch.append((p, start, start + n))
                    offsets[id(p)] = start + n
                    quota -= n
                    room -= n
                    if offsets[id(p)] == len(p.texts):
                        queue.pop(0)
                if not queue:
                    order.remove(tenant)
                if room == 0:
                    break
        return batch

    def _isolate(self, batch: list[_Slice]) -> None:
        """A shared pass failed: encode each call's slice on its own, so only the call whose text makes the
        encoder raise gets the error and the others their vectors (one pass per slice, at most ``max_batch``)."""
        log.warning("an embedding pass of %d calls failed; retrying each call on its own", len(batch))
        for p, start, stop in batch:
            try:
                p.parts.append(np.array(self._encode(p.texts[start:stop]), copy=True))
            except Exception as exc:
                p.error = exc

    def _company_likely(self) -> bool:
        """Whether to wait ``max_wait_s`` for more calls: others are already queued, or the last pass was shared.
        A lone client's passes serve one call each, so its queries are not delayed; under load the waits fill
        the passes (docs/decisions/0007-query-micro-batching.md)."""
        with self._cond:
            return self._shared or len(self._pending) > 1

    def _gather(self) -> None:
        deadline = time.monotonic() + self._max_wait
        with self._cond:
            self._gathering = True
            try:
                while sum(p.left for p in self._pending) < self._max_batch:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(remaining)
            finally:
                self._gathering = False

    def _run(self, batch: list[_Slice]) -> None:
        try:
            try:
                vectors = self._encode([t for p, start, stop in batch for t in p.texts[start:stop]])
            except Exception as exc:
                # A server that is down or slow fails every call alike: retrying each alone only multiplies
                # the waiting (freki.embed.remote).
                if len(batch) == 1 or isinstance(exc, Unavailable | DeadlineExceeded):
                    raise
                self._isolate(batch)
            else:
                row = 0
                for p, start, stop in batch:
                    # Own copies: a cached query vector must not pin the whole batch array.
                    p.parts.append(np.array(vectors[row:row + stop - start], copy=True))
                    row += stop - start
        except BaseException as exc:  # every waiter must learn of the failure, not hang
            for p, _, _ in batch:
                if p.error is None:
                    p.error = exc
        finally:
            with self._cond:
                for p, _, stop in batch:
                    if p.error is not None and p.left > 0:  # the rest of a failed call is not encoded
                        self._pending = [q for q in self._pending if q is not p]
                    if p.error is not None or stop == len(p.texts):
                        if p.error is None:
                            p.vectors = p.parts[0] if len(p.parts) == 1 else np.concatenate(p.parts)
                        p.parts = []
                        p.done = True
                        p.wake.set()
                self.batches += 1
                self.texts += sum(stop - start for _, start, stop in batch)
                self._shared = len(batch) > 1
