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
is to lead: with one shared condition and ``notify_all`` every pass woke every waiter (30 of them
at 64 clients) only for most to find nothing to do and sleep again, each wake-up a thread switch
and a GIL hand-off (0.43 ms of server CPU per query at 64 clients; scripts/bench/query_stages.py).

Queries jump the queue: a call made with ``urgent=True`` (``Embedder.embed_query``) is taken
before every waiting indexing call, and a pass that carries urgent calls carries nothing else,
so a query waits for at most the one pass already running, never for the indexing backlog.

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
    vectors: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False
    lead: bool = False  # handed the lead by the previous leader: run the next pass
    wake: threading.Event = field(default_factory=threading.Event)


class QueryBatcher:
    """Encodes texts, merging calls that arrive concurrently into shared passes. Thread-safe."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], *, max_batch: int = 64,
                 max_wait_s: float = 0.0) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1 (got {max_batch})")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0 (got {max_wait_s})")
        self._encode = encode
        self._max_batch = max_batch
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
    def settings(self) -> tuple[int, float]:
        """``(max_batch, max_wait_s)`` as constructed."""
        return self._max_batch, self._max_wait

    def encode(self, text: str) -> np.ndarray:
        """The embedding of one text."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str], *, urgent: bool = False) -> np.ndarray:
        """Embeddings of ``texts`` as an ``(n, dim)`` array, computed in whatever pass they land in.

        ``urgent`` calls (queries someone is waiting on) go into the next pass ahead of the rest.
        """
        mine = _Pending(list(texts), urgent)
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
            leading = True  # its own call is still queued (taken after urgent ones): lead the next pass too
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

    def _take(self) -> list[_Pending]:
        with self._cond:
            urgent = [p for p in self._pending if p.urgent]
            candidates = urgent or self._pending
            batch: list[_Pending] = []
            total = 0
            for item in candidates:
                if batch and total + len(item.texts) > self._max_batch:
                    break
                batch.append(item)
                total += len(item.texts)
            taken = {id(p) for p in batch}
            self._pending = [p for p in self._pending if id(p) not in taken]
            return batch

    def _isolate(self, batch: list[_Pending]) -> None:
        """A shared pass failed: encode each call on its own, so only the call whose text makes the encoder
        raise gets the error and the others their vectors (one pass per call, at most ``max_batch``)."""
        log.warning("an embedding pass of %d calls failed; retrying each call on its own", len(batch))
        for p in batch:
            try:
                p.vectors = np.array(self._encode(p.texts), copy=True)
            except Exception as exc:
                p.error = exc

    def _company_likely(self) -> bool:
        """Whether to wait ``max_wait_s`` for more calls: others are already queued, or the last pass was shared.
        A lone client's passes serve one call each, so its queries are not delayed; under load the waits fill
        the passes (64 clients, 10k chunks: 9.9 -> 8.8 ms server CPU per query with 3 ms, docs/scaling.md)."""
        with self._cond:
            return self._shared or len(self._pending) > 1

    def _gather(self) -> None:
        deadline = time.monotonic() + self._max_wait
        with self._cond:
            self._gathering = True
            try:
                while sum(len(p.texts) for p in self._pending) < self._max_batch:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(remaining)
            finally:
                self._gathering = False

    def _run(self, batch: list[_Pending]) -> None:
        try:
            try:
                vectors = self._encode([t for p in batch for t in p.texts])
            except Exception as exc:
                # A server that is down or slow fails every call alike: retrying each alone only multiplies
                # the waiting (freki.embed.remote).
                if len(batch) == 1 or isinstance(exc, Unavailable | DeadlineExceeded):
                    raise
                self._isolate(batch)
            else:
                start = 0
                for p in batch:
                    # Own copies: a cached query vector must not pin the whole batch array.
                    p.vectors = np.array(vectors[start:start + len(p.texts)], copy=True)
                    start += len(p.texts)
        except BaseException as exc:  # every waiter must learn of the failure, not hang
            for p in batch:
                if p.vectors is None and p.error is None:
                    p.error = exc
        finally:
            with self._cond:
                for p in batch:
                    p.done = True
                    p.wake.set()
                self.batches += 1
                self.texts += sum(len(p.texts) for p in batch)
                self._shared = len(batch) > 1
