"""Micro-batching of concurrent query embeddings.

One forward pass over 32 short queries costs little more than a pass over one, and the model
can only run one pass at a time anyway (``Embedder`` serialises encoding). So when many clients
query at once, the requests that arrive while a batch is being encoded are gathered and encoded
together in the next pass. Nobody waits for company when the model is idle: a lone query goes
straight through (``max_wait_s`` = 0, the default), so single-client latency is unchanged.

There is no background thread: whichever caller finds the model free becomes the *leader*, takes
up to ``max_batch`` pending texts, encodes them, hands every waiter its vector and steps down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class _Pending:
    text: str
    vector: np.ndarray | None = None
    error: BaseException | None = None
    done: bool = False


class QueryBatcher:
    """Encodes single texts, batching those that arrive concurrently. Thread-safe."""

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], *, max_batch: int = 64,
                 max_wait_s: float = 0.0) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1 (got {max_batch})")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0 (got {max_wait_s})")
        self._encode = encode
        self._max_batch = max_batch
        self._max_wait = max_wait_s
        self._cond = threading.Condition()
        self._pending: list[_Pending] = []
        self._busy = False
        self.batches = 0
        self.texts = 0

    def encode(self, text: str) -> np.ndarray:
        """The embedding of ``text``, computed in whatever batch it lands in."""
        mine = _Pending(text)
        with self._cond:
            self._pending.append(mine)
            self._cond.notify_all()  # a leader gathering company (max_wait_s) wants to know
        while True:
            with self._cond:
                while not mine.done and self._busy:
                    self._cond.wait()
                if mine.done:
                    break
                self._busy = True  # this caller leads the next batch
            if self._max_wait:
                self._gather()
            with self._cond:
                batch = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
            self._run(batch)
        if mine.error is not None:
            raise mine.error
        assert mine.vector is not None
        return mine.vector

    def _gather(self) -> None:
        deadline = time.monotonic() + self._max_wait
        with self._cond:
            while len(self._pending) < self._max_batch:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._cond.wait(remaining)

    def _run(self, batch: list[_Pending]) -> None:
        try:
            vectors = self._encode([p.text for p in batch])
            for p, v in zip(batch, vectors, strict=True):
                p.vector = np.array(v, copy=True)  # own row: a cached view would pin the batch
        except BaseException as exc:  # every waiter must learn of the failure, not hang
            for p in batch:
                p.error = exc
        finally:
            with self._cond:
                for p in batch:
                    p.done = True
                self._busy = False
                self.batches += 1
                self.texts += len(batch)
                self._cond.notify_all()
