"""How queries and indexing share the embedding model: a query lane beside capped, lower-priority indexing.

The model serves two kinds of work with opposite needs: a query is one short text someone is waiting on;
indexing is thousands of long texts nobody watches pass by. On one shared model a query waits for the
indexing pass in progress, however short the queue it jumps (``freki.embed.query_batching``). So, with the
query lane on (``EncoderScheduling.query_lane``), queries run on a model session of their own, never behind
an indexing pass, and indexing passes:

* run on one dedicated thread at a lower CPU priority (``index_nice``): the threads an indexing pass
  starts (ONNX Runtime's and torch's pools, created from that thread) inherit it, so when queries and
  indexing both want the cores, the operating system runs the queries first, and indexing still gets
  every cycle they leave idle;
* may be capped to ``index_threads`` cores (default: every core), to keep cores free for other work
  whatever the priorities.

See docs/decisions/0301-fair-encoder-scheduling.md for the measurements.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger("freki.embedding")

T = TypeVar("T")


@dataclass(frozen=True)
class EncoderScheduling:
    """The scheduling settings (``FrekiSettings.embedding_scheduling``)."""

    query_lane: bool = True
    index_threads: int = 0  # 0: every core
    index_nice: int = 10  # 0: same priority as queries
    index_pass_texts: int = 16


def available_cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def index_threads(configured: int) -> int:
    """Threads an indexing pass may use: ``configured``, or (0) every core."""
    return configured if configured > 0 else available_cores()


def lower_own_priority(nice: int) -> None:
    """Raise the calling thread's nice value to at least ``nice`` (Linux: nice is per thread, and threads it
    starts inherit it). Lowering priority needs no privilege; where it is not supported this only logs."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, max(nice, os.getpriority(os.PRIO_PROCESS, tid)))
    except OSError as exc:
        log.warning("cannot lower the indexing thread's CPU priority (%s); indexing runs at normal priority", exc)


class IndexPassThread:
    """One thread at the indexing priority that runs indexing passes (and builds what they use, so that
    the pools those create inherit its priority). Calls run one at a time, in order."""

    def __init__(self, nice: int) -> None:
        self.nice = nice
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="freki-index-pass", initializer=lower_own_priority,
                                        initargs=(nice,))

    def run(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """``fn(*args, **kwargs)`` on the indexing thread; its result or its exception."""
        return self._pool.submit(fn, *args, **kwargs).result()
