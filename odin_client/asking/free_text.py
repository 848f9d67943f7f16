"""The free-text ``ask`` (``grounded=False``): retrieve, then let Geri answer in prose, streamed if asked.

Kept for callers that want Geri's own words and streaming, and for the ``allow_no_context`` fallback
(answer without sources when Freki is down, saying so in ``note``). No citation checks, no abstention.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Protocol

from wolf.v1 import common_pb2

from odin_client.types.errors import DeadlineExceeded, ServiceUnavailable
from odin_client.types.results import Answer, Generation, Retrieval, Source, Timings


class SyncRag(Protocol):
    """What the blocking client offers this module (a protocol: the client imports this module)."""

    @property
    def retrieve(self) -> Callable[..., Retrieval]: ...
    @property
    def generate(self) -> Callable[..., Generation]: ...
    @property
    def generate_stream(self) -> Callable[..., Iterator[str | Generation]]: ...


class AsyncRag(Protocol):
    """What the asyncio client offers this module."""

    @property
    def retrieve(self) -> Callable[..., Awaitable[Retrieval]]: ...
    @property
    def generate(self) -> Callable[..., Awaitable[Generation]]: ...
    @property
    def generate_stream(self) -> Callable[..., AsyncIterator[str | Generation]]: ...


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def consume_stream(events: Iterator[str | Generation], on_text: Callable[[str], None]) -> Generation:
    """Pass text deltas to ``on_text``; return the final Generation."""
    for event in events:
        if isinstance(event, Generation):
            return event
        on_text(event)
    raise AssertionError("generate_stream ends with a Generation or raises")  # pragma: no cover


def free_text_ask(client: SyncRag, question: str, *, top_k: int, filters: Any, mode: str,
                  tenant_id: str | None, allow_no_context: bool, model: str, max_tokens: int | None,
                  temperature: float | None, on_text: Callable[[str], None] | None) -> Answer:
    """See ``OdinClient.ask(grounded=False)``."""
    start = time.perf_counter()
    context: common_pb2.RAGContext | None = None
    sources: list[Source] = []
    note = ""
    try:
        retrieval = client.retrieve(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id)
        context, sources = retrieval.context, retrieval.sources
    except (ServiceUnavailable, DeadlineExceeded) as exc:
        if not allow_no_context:
            raise
        note = f"Answered WITHOUT retrieved context because retrieval failed: {exc}"
    retrieve_ms = _ms(start)
    gen_start = time.perf_counter()
    kwargs: dict[str, Any] = dict(context=context, model=model, max_tokens=max_tokens, temperature=temperature,
                                  tenant_id=tenant_id)
    if on_text is None:
        generation = client.generate(question, **kwargs)
    else:
        generation = consume_stream(client.generate_stream(question, **kwargs), on_text)
    timings = Timings(retrieve_ms=retrieve_ms, generate_ms=_ms(gen_start), total_ms=_ms(start))
    return Answer(question=question, text=generation.text, sources=sources, timings=timings, generation=generation,
                  used_context=bool(sources), note=note)


async def free_text_ask_async(client: AsyncRag, question: str, *, top_k: int, filters: Any, mode: str,
                              tenant_id: str | None, allow_no_context: bool, model: str, max_tokens: int | None,
                              temperature: float | None, on_text: Callable[[str], None] | None) -> Answer:
    """See ``AsyncOdinClient.ask(grounded=False)``."""
    start = time.perf_counter()
    context: common_pb2.RAGContext | None = None
    sources: list[Source] = []
    note = ""
    try:
        retrieval = await client.retrieve(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id)
        context, sources = retrieval.context, retrieval.sources
    except (ServiceUnavailable, DeadlineExceeded) as exc:
        if not allow_no_context:
            raise
        note = f"Answered WITHOUT retrieved context because retrieval failed: {exc}"
    retrieve_ms = _ms(start)
    gen_start = time.perf_counter()
    options: dict[str, Any] = dict(context=context, model=model, max_tokens=max_tokens, temperature=temperature,
                                   tenant_id=tenant_id)
    if on_text is None:
        generation = await client.generate(question, **options)
    else:
        final: Generation | None = None
        async for item in client.generate_stream(question, **options):
            if isinstance(item, Generation):
                final = item
            else:
                on_text(item)
        assert final is not None  # generate_stream ends with a Generation or raises
        generation = final
    timings = Timings(retrieve_ms=retrieve_ms, generate_ms=_ms(gen_start), total_ms=_ms(start))
    return Answer(question=question, text=generation.text, sources=sources, timings=timings, generation=generation,
                  used_context=bool(sources), note=note)
