"""The free-text ``ask`` (``grounded=False``): retrieve, then let Geri answer in prose, streamed if asked.

Kept for callers that want Geri's own words and streaming, and for the ``allow_no_context`` fallback
(answer without sources when Freki is down, saying so in ``note``). No citation checks, no abstention. The
clients run the two calls; this module decides what a failed retrieval means and builds the answer.
"""

from __future__ import annotations

import time

from odin_client.types.errors import DeadlineExceeded, OdinError, ServiceUnavailable
from odin_client.types.results import Answer, Generation, Retrieval, Timings


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def without_context(exc: OdinError, allow_no_context: bool) -> str:
    """The answer's note when retrieval failed with ``exc`` and the answer goes on without sources; raises
    ``exc`` unless Freki was unreachable (or too slow) and ``allow_no_context``."""
    if not allow_no_context or not isinstance(exc, ServiceUnavailable | DeadlineExceeded):
        raise exc
    return f"Answered WITHOUT retrieved context because retrieval failed: {exc}"


def free_text_answer(question: str, retrieval: Retrieval | None, generation: Generation, *, note: str,
                     started: float, generate_started: float) -> Answer:
    """The Answer of one free-text ask (``started``, ``generate_started``: perf_counter() readings)."""
    sources = retrieval.sources if retrieval is not None else []
    timings = Timings(retrieve_ms=(generate_started - started) * 1000.0, generate_ms=_ms(generate_started),
                      total_ms=_ms(started))
    return Answer(question=question, text=generation.text, sources=sources, timings=timings, generation=generation,
                  used_context=bool(sources), note=note)
