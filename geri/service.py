"""The ``wolf.v1.GeriService`` servicer: gRPC glue around :class:`~geri.generation.GenerationPipeline`.

Exceptions are left to :class:`wolf_service.interceptors.ErrorMappingInterceptor`. Each call
gets a cancel event that gRPC sets when the RPC ends for any reason (client cancel, deadline,
server shutdown past its grace), which is what stops the backend mid-generation.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.base import Backend
from geri.generation import GenerationPipeline
from geri.settings import GeriSettings
from wolf_service.errors import Cancelled

SERVICE_NAME = geri_pb2.DESCRIPTOR.services_by_name["GeriService"].full_name


def cancel_event_for(context: grpc.ServicerContext) -> threading.Event:
    """An event set once the RPC terminates (already set if it has)."""
    event = threading.Event()
    if not context.add_callback(event.set):
        event.set()
    return event


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
        cancel = cancel_event_for(context)
        rid = request.request_id
        for event in self._pipeline.run(request, cancel):
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
