"""The gateway's routes (FastAPI). Blocking Odin calls run in FastAPI's thread pool."""

from __future__ import annotations

import base64
import struct
from contextlib import AbstractContextManager
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from odin_client.client import OdinClient
from odin_client.gateway import chat
from odin_client.gateway.clients import ClientPool, bearer_key
from odin_client.gateway.errors import GatewayError, body, from_gateway, from_odin
from odin_client.gateway.schemas import ChatRequest, EmbeddingsRequest, IndexRequest, RetrieveRequest
from odin_client.gateway.settings import GatewaySettings
from odin_client.gateway.users import request_user
from odin_client.settings import OdinSettings
from odin_client.types.errors import OdinError


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with an OpenAI-style 413: at once when Content-Length says so,
    else as soon as the body passes it (a chunked upload is never buffered past the limit)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    def _refusal(self) -> GatewayError:
        return GatewayError(413, f"request body over the gateway's max_body_bytes ({self.max_bytes:,})",
                            code="body_too_large")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await from_gateway(self._refusal())(scope, receive, send)
            return
        seen, refused = 0, False

        async def limited() -> Message:
            nonlocal seen, refused
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes and not refused:
                refused = True  # answer 413 now; the app sees the client leave and its own reply is dropped
                await from_gateway(self._refusal())(scope, receive, send)
                return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, limited, guarded)


# The widest page_size the wire (an int32) carries; Freki names its own, smaller limit.
INT32_MAX = 2**31 - 1


def create_app(settings: GatewaySettings | None = None, odin: OdinSettings | None = None) -> FastAPI:
    """The ASGI app; ``odin`` names Freki and Geri (default: ``OdinSettings()`` from env/file)."""
    limits = settings or GatewaySettings()
    # A rate limit's wait is the HTTP caller's to make (429 + Retry-After), not a worker's to hold.
    base = (odin or OdinSettings()).model_copy(update={"retry_max_server_wait_s": 0.0})
    pool = ClientPool(base, limits.clients_cached, lambda: limits.api_keys)
    app = FastAPI(title="Wolfpack RAG — OpenAI-compatible gateway", version="1")
    app.state.pool = pool
    app.router.add_event_handler("shutdown", pool.close)

    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)

    @app.exception_handler(OdinError)
    async def odin_error(_: Request, exc: OdinError) -> JSONResponse:
        return from_odin(exc)

    @app.exception_handler(GatewayError)
    async def gateway_error(_: Request, exc: GatewayError) -> JSONResponse:
        return from_gateway(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse(body(f"{where or 'body'}: {first.get('msg', 'invalid')}"[:500], "invalid_request_error",
                                 "invalid_body", where[:200] or None), 400)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        # Routing's own refusals (no such route, wrong method) in the same shape as every other error.
        code = {404: "unknown_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return JSONResponse(body(str(exc.detail), kind, code), exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def internal(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(body("the gateway failed on this request; see its log", "server_error",
                                 "internal_error"), 500)

    def key(request: Request) -> str:
        return bearer_key(request.headers.get("authorization", ""), required=limits.require_api_key)

    def user(request: Request, body_user: str | None = None) -> str:
        return request_user(request, body_user, limits.user_id_max_chars)

    def client(request: Request, body_user: str | None = None) -> AbstractContextManager[OdinClient]:
        """The caller's Odin client, leased for the ``with`` block (``ClientPool``), acting for the request's
        user (``x-wolf-user`` on every call to Freki and Geri)."""
        return pool.lease(key(request), user(request, body_user))

    @app.get("/v1/models")
    def models(request: Request) -> dict[str, Any]:
        with client(request) as odin:
            listed = odin.models()
        return {"object": "list", "data": [
            {"id": m.get("name", ""), "object": "model", "created": 0, "owned_by": m.get("backend", "geri")}
            for m in listed.models]}

    @app.post("/v1/chat/completions", response_model=None)
    def chat_completions(req: ChatRequest, request: Request) -> dict[str, Any] | StreamingResponse:
        chat.check(req, limits)
        if req.stream:
            provisional = limits.stream_provisional if req.stream_provisional is None else req.stream_provisional
            events = pool.stream(key(request), lambda odin: chat.stream(odin, req, provisional=provisional),
                                 user(request, req.user))
            return StreamingResponse(events, media_type="text/event-stream")
        with client(request, req.user) as odin:
            return chat.completion(odin, req)

    @app.post("/v1/embeddings")
    def embeddings(req: EmbeddingsRequest, request: Request) -> dict[str, Any]:
        texts = [req.input] if isinstance(req.input, str) else req.input
        if not texts or len(texts) > limits.max_embedding_inputs:
            raise GatewayError(413 if texts else 400, f"input must hold 1 to max_embedding_inputs "
                                                      f"({limits.max_embedding_inputs}) texts (got {len(texts)})",
                               code="too_many_inputs" if texts else "empty_input", param="input")
        with client(request, req.user) as odin:
            result = odin.embed(texts, tenant_id=req.tenant_id)
        if req.dimensions is not None and result.vectors and req.dimensions != len(result.vectors[0]):
            raise GatewayError(400, f"dimensions: {result.model} makes {len(result.vectors[0])}-dimensional vectors "
                                    f"and cannot shorten them (got {req.dimensions}); leave dimensions out",
                               code="unsupported_dimensions", param="dimensions")

        def encode(vector: list[float]) -> list[float] | str:
            if req.encoding_format == "base64":  # what the openai client asks for: little-endian float32
                return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            return vector

        return {"object": "list", "model": result.model,
                "data": [{"object": "embedding", "index": i, "embedding": encode(v)}
                         for i, v in enumerate(result.vectors)],
                "usage": {"prompt_tokens": result.prompt_tokens, "total_tokens": result.prompt_tokens}}

    @app.post("/v1/documents")
    def index_document(req: IndexRequest, request: Request) -> dict[str, Any]:
        with client(request) as odin:
            done = odin.index_text(req.text, source=req.source, document_id=req.document_id,
                                   content_type=req.content_type, metadata=req.metadata,
                                   owner_id=req.owner_id, tenant_id=req.tenant_id)
        return done.to_dict()

    @app.get("/v1/documents")
    def list_documents(request: Request, page_size: Annotated[int, Query(ge=0, le=INT32_MAX)] = 100,
                       page_token: str = "", owner_id: str = "", tenant_id: str | None = None) -> dict[str, Any]:
        with client(request) as odin:
            return odin.list_documents(page_size=page_size, page_token=page_token, owner_id=owner_id,
                                       tenant_id=tenant_id).to_dict()

    @app.get("/v1/documents/{document_id:path}")
    def get_document(document_id: str, request: Request, tenant_id: str | None = None) -> dict[str, Any]:
        with client(request) as odin:
            return odin.get_document(document_id, tenant_id=tenant_id).to_dict()

    @app.delete("/v1/documents/{document_id:path}")
    def delete_document(document_id: str, request: Request, tenant_id: str | None = None) -> dict[str, Any]:
        with client(request) as odin:
            chunks = odin.delete_document(document_id, tenant_id=tenant_id)
        return {"document_id": document_id, "deleted": True, "chunks_deleted": chunks}

    @app.post("/v1/retrieve")
    def retrieve(req: RetrieveRequest, request: Request) -> dict[str, Any]:
        with client(request) as odin:
            return odin.retrieve(req.query, top_k=req.top_k, filters=req.filters, mode=req.mode,
                                 tenant_id=req.tenant_id).to_dict()

    return app
