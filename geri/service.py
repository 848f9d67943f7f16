"""The ``wolf.v1.GeriService`` servicer: gRPC glue around :class:`~geri.generation.GenerationPipeline`.

Exceptions are left to :class:`wolf_service.error_mapping.ErrorMappingInterceptor`. Each call
gets a cancel event that gRPC sets when the RPC ends for any reason (client cancel, deadline,
server shutdown past its grace), which is what stops the backend mid-generation.

A cancelled stream needs one more step: gRPC stops pulling from the response iterator, so a
generator suspended at a ``yield`` would never run again to notice the event, and the backend
(e.g. an open Ollama HTTP stream) would linger until garbage collection. The termination
callback therefore also closes the iterator when no thread is inside it, which runs the
backends' ``finally`` blocks (close the HTTP response, stop the model thread) right away.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator
from typing import TypeVar

import grpc
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.base import Backend
from geri.generation import GenerationPipeline, StreamEvent
from geri.settings import GeriSettings
from wolf_service.errors import Cancelled

T = TypeVar("T")

SERVICE_NAME = geri_pb2.DESCRIPTOR.services_by_name["GeriService"].full_name


def cancel_event_for(context: grpc.ServicerContext) -> threading.Event:
    """An event set once the RPC terminates (already set if it has)."""
    event = threading.Event()
    if not context.add_callback(event.set):
        event.set()
    return event


class ClosableStream(Iterator[T]):
    """An iterator that another thread can close, but only while no thread is inside ``next``."""

    def __init__(self, events: Generator[T, None, None]) -> None:
        self._events = events
        self._lock = threading.Lock()

    def __next__(self) -> T:
        with self._lock:
            return next(self._events)

    def close_if_idle(self) -> None:
        """Close the generator unless it is running (then it sees the cancel event itself)."""
        if self._lock.acquire(blocking=False):
            try:
                self._events.close()
            finally:
                self._lock.release()


class GeriServicer(geri_pb2_grpc.GeriServiceServicer):
    """Generation over gRPC: unary, server-streaming, and the model list."""

    def __init__(self, settings: GeriSettings, backend: Backend) -> None:
        self._backend = backend
        self._pipeline = GenerationPipeline(settings, backend)

    def Generate(  # noqa: N802 - name fixed by the proto
        self, request: common_pb2.WolfRequest, context: grpc.ServicerContext
    ) -> common_pb2.WolfResponse:
        """Generate a complete answer."""
        cancel = cancel_event_for(context)
        for event in self._pipeline.run(request, cancel):
            if event.response is not None:
                return event.response
        raise Cancelled(f"generation of request {request.request_id} was cancelled")

    def GenerateStream(  # noqa: N802
        self, request: common_pb2.WolfRequest, context: grpc.ServicerContext
    ) -> Iterator[geri_pb2.GenerateEvent]:
        """Stream text (and reasoning) deltas, then one final event with the full response."""
        cancel = threading.Event()
        events: ClosableStream[StreamEvent] = ClosableStream(self._pipeline.run(request, cancel))

        def on_terminate() -> None:
            cancel.set()
            events.close_if_idle()

        if not context.add_callback(on_terminate):
            on_terminate()
        rid = request.request_id
        for event in events:
            if cancel.is_set():
                return  # nobody is listening; the backend has been told to stop
            if event.kind == "text":
                yield geri_pb2.GenerateEvent(request_id=rid, text_delta=event.text)
            elif event.kind == "thinking":
                yield geri_pb2.GenerateEvent(request_id=rid, thinking_delta=event.text)
            else:
                yield geri_pb2.GenerateEvent(request_id=rid, final=event.response)

    def ListModels(  # noqa: N802
        self, request: geri_pb2.ListModelsRequest, context: grpc.ServicerContext
    ) -> geri_pb2.ListModelsResponse:
        """Models the configured backend can serve, and the default one."""
        return geri_pb2.ListModelsResponse(
            models=[
                geri_pb2.ModelInfo(
                    name=m.name,
                    backend=m.backend,
                    size_bytes=m.size_bytes,
                    context_length=m.context_length,
                    family=m.family,
                )
                for m in self._backend.list_models()
            ],
            default_model=self._backend.default_model,
        )
