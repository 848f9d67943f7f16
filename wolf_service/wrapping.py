"""Base class for server interceptors that run code around every call.

gRPC server interceptors only see the method name and metadata; to observe the
request, the response and the final status code they must wrap the handler. This
module does that once, for unary, server-streaming and bidirectional RPCs (Freki's
IndexDocuments), so the metrics, access-log, auth and audit interceptors each implement
two small methods instead of re-doing the handler plumbing. In a bidirectional RPC,
``stream`` gets the iterator of request messages, and ``each_message`` sees every one of
them before the handler does (the auth interceptor pins each one to its key's tenant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc

UnaryCall = Callable[[Any, grpc.ServicerContext], Any]
StreamCall = Callable[[Any, grpc.ServicerContext], Iterator[Any]]

# Probes and tooling must work without credentials and are not part of the audit trail.
INFRASTRUCTURE_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


def envelope_of(request: Any) -> Any:
    """The message that carries a request's id and tenant: the request itself, or the ``WolfRequest`` it
    wraps in its ``request`` field (GeriService.Answer, RewriteQuery)."""
    if hasattr(request, "tenant_id") or hasattr(request, "request_id"):
        return request
    nested = getattr(request, "request", None)
    return nested if hasattr(nested, "tenant_id") else request


def is_infrastructure(method: str) -> bool:
    """True for health-check and reflection methods."""
    return method.startswith(INFRASTRUCTURE_PREFIXES)


def final_code(context: grpc.ServicerContext, failed: bool) -> grpc.StatusCode:
    """The status code a call ended with, as far as the server knows.

    ``context.abort`` sets the code before raising, so after an exception the code is
    normally known; a bare exception that escaped every interceptor becomes UNKNOWN,
    which is what grpcio reports to the client in that case.
    """
    code = context.code()  # type: ignore[attr-defined]
    if isinstance(code, grpc.StatusCode):
        return code
    return grpc.StatusCode.UNKNOWN if failed else grpc.StatusCode.OK


def rpc_name(method: str) -> str:
    """``/wolf.v1.FrekiService/IndexDocument`` → ``FrekiService/IndexDocument``."""
    service, _, name = method.lstrip("/").rpartition("/")
    return f"{service.rpartition('.')[2]}/{name}" if service else method


def observe_stream(
    call: StreamCall,
    request: Any,
    context: grpc.ServicerContext,
    on_end: Callable[[grpc.StatusCode, int, Any], None],
    on_message: Callable[[Any], None] | None = None,
) -> Iterator[Any]:
    """Yield the messages of ``call(request, context)`` and report how the stream ended.

    ``on_message`` sees each message before it is sent; ``on_end(code, sent, last)`` runs
    exactly once with the final status (CANCELLED when the client went away or its
    deadline passed mid-stream), the number of messages sent and the last one.
    """
    failed, sent, last = True, 0, None
    code: grpc.StatusCode | None = None
    try:
        for message in call(request, context):
            if on_message is not None:
                on_message(message)
            sent, last = sent + 1, message
            yield message
        failed = False
    except GeneratorExit:
        code = grpc.StatusCode.CANCELLED
        raise
    finally:
        on_end(code or final_code(context, failed), sent, last)


class WrappingInterceptor(grpc.ServerInterceptor):
    """Wraps unary-unary and unary-stream handlers with :meth:`unary` and :meth:`stream`.

    Streaming-request handlers (only reflection uses them) pass through untouched.
    """

    @staticmethod
    def wrap_deserializer(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
        """The request deserializer to use (unchanged by default; see ``ErrorMappingInterceptor``)."""
        return deserializer

    def applies_to(self, method: str) -> bool:
        """Whether this interceptor wraps ``method``; all methods by default."""
        return True

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        """Run ``call(request, context)`` and return its response."""
        return call(request, context)

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        """Yield the messages of ``call(request, context)``."""
        yield from call(request, context)

    def each_message(self, method: str, message: Any, context: grpc.ServicerContext) -> Any:
        """A client-stream message on its way to the handler (returned as is by default)."""
        return message

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method  # type: ignore[attr-defined]
        if handler is None or not self.applies_to(method):
            return handler
        if handler.unary_unary is not None:
            inner_uu = handler.unary_unary

            def unary_unary(request: Any, context: grpc.ServicerContext) -> Any:
                return self.unary(method, request, context, inner_uu)

            return grpc.unary_unary_rpc_method_handler(
                unary_unary,
                request_deserializer=self.wrap_deserializer(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            inner_us = handler.unary_stream

            def unary_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                return self.stream(method, request, context, inner_us)

            return grpc.unary_stream_rpc_method_handler(
                unary_stream,
                request_deserializer=self.wrap_deserializer(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            inner_ss = handler.stream_stream

            def stream_stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                checked = (self.each_message(method, m, context) for m in requests)
                return self.stream(method, checked, context, inner_ss)

            return grpc.stream_stream_rpc_method_handler(
                stream_stream,
                request_deserializer=self.wrap_deserializer(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        return handler
