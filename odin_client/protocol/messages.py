"""Build the request messages for Freki and Geri from plain Python arguments.

Shared by the blocking and the asyncio client so both send exactly the same requests.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from wolf.v1 import common_pb2, freki_pb2, geri_pb2

from odin_client.protocol.files import DocumentFile, read_document
from odin_client.types.errors import InvalidRequest
from odin_client.types.filters import Filters, metadata_filters

SEARCH_MODES = {
    "": common_pb2.SEARCH_MODE_UNSPECIFIED,
    "dense": common_pb2.SEARCH_MODE_DENSE,
    "sparse": common_pb2.SEARCH_MODE_SPARSE,
    "hybrid": common_pb2.SEARCH_MODE_HYBRID,
}


def new_request_id() -> str:
    """A request id the services log, so a client error can be found in their logs."""
    return f"odin-{uuid.uuid4().hex[:16]}"


def retrieve_request(
    query: str,
    *,
    tenant_id: str,
    top_k: int = 0,
    filters: Filters | None = None,
    mode: str = "",
    score_threshold: float | None = None,
    document_ids: Sequence[str] = (),
    query_variants: Sequence[str] = (),
    graph_expand: bool | None = None,
    explain: bool = False,
    neighbours: int = 0,
) -> common_pb2.WolfRequest:
    """RetrieveContext request for ``query`` (and its ``query_variants``, fused by Freki)."""
    if mode not in SEARCH_MODES:
        raise InvalidRequest(f"search mode must be one of dense, sparse, hybrid (got {mode!r})")
    options = common_pb2.RetrievalOptions(
        top_k=top_k,
        filters=metadata_filters(filters),
        mode=SEARCH_MODES[mode],
        document_ids=list(document_ids),
        query_variants=list(query_variants),
        explain=explain,
        neighbours=neighbours,
    )
    if graph_expand is not None:
        options.graph_expand = graph_expand
    if score_threshold is not None:
        options.score_threshold = score_threshold
    return common_pb2.WolfRequest(
        request_id=new_request_id(),
        model_type=common_pb2.RAG,
        prompt=query,
        tenant_id=tenant_id,
        retrieval=options,
    )


def generate_request(
    prompt: str,
    *,
    tenant_id: str,
    context: common_pb2.RAGContext | None = None,
    model: str = "",
    system_prompt: str = "",
    max_tokens: int | None = None,
    temperature: float | None = None,
    request_id: str = "",
    json_schema: Mapping[str, Any] | None = None,
    session_id: str = "",
    owner_id: str = "",
    messages: Sequence[common_pb2.ChatTurn] = (),
    tools: Sequence[common_pb2.ToolDefinition] = (),
    tool_choice: str = "",
) -> common_pb2.WolfRequest:
    """Generate / GenerateStream request, optionally grounded in a RAG context, structured (``json_schema``),
    in a conversation (``session_id``), continuing earlier turns (``messages``) or offering ``tools``."""
    meta = common_pb2.RequestMetadata(session_id=session_id, owner_id=owner_id)
    if max_tokens is not None:
        meta.max_tokens = max_tokens
    if temperature is not None:
        meta.temperature = temperature
    request = common_pb2.WolfRequest(
        request_id=request_id or new_request_id(),
        model_type=common_pb2.LLM,
        prompt=prompt,
        tenant_id=tenant_id,
        metadata=meta,
        generation=common_pb2.GenerationOptions(
            model=model, system_prompt=system_prompt, json_schema=json.dumps(json_schema) if json_schema else "",
            messages=list(messages), tools=list(tools), tool_choice=tool_choice,
        ),
    )
    if context is not None:
        request.context.CopyFrom(context)
    return request


def answer_request(
    question: str,
    context: common_pb2.RAGContext,
    *,
    tenant_id: str,
    options: geri_pb2.AnswerOptions,
    model: str = "",
    max_tokens: int | None = None,
    temperature: float | None = None,
    session_id: str = "",
    owner_id: str = "",
) -> geri_pb2.AnswerRequest:
    """Answer / AnswerStream request: a grounded answer to ``question`` over the ``context`` Freki returned
    (sent unchanged: Geri numbers it, gates on its scores and names Freki's threshold when it is empty)."""
    request = generate_request(question, tenant_id=tenant_id, context=context, model=model, max_tokens=max_tokens,
                               temperature=temperature, session_id=session_id, owner_id=owner_id)
    return geri_pb2.AnswerRequest(request=request, options=options)


def rewrite_request(
    question: str,
    *,
    tenant_id: str,
    variants: int = 0,
    model: str = "",
    session_id: str = "",
    history: Sequence[common_pb2.ChatTurn] = (),
) -> geri_pb2.RewriteQueryRequest:
    """RewriteQuery request: ``question`` as a standalone search query from its conversation (the session's
    turns, else ``history``), with ``variants`` paraphrases."""
    request = generate_request(question, tenant_id=tenant_id, model=model, session_id=session_id, messages=history)
    return geri_pb2.RewriteQueryRequest(request=request, variants=variants)


def index_text_request(
    text: str,
    *,
    tenant_id: str,
    source: str,
    document_id: str = "",
    content_type: str = "",
    metadata: Mapping[str, str] | None = None,
    owner_id: str = "",
    content_bytes: bytes = b"",
) -> freki_pb2.IndexDocumentRequest:
    """IndexDocument request for text (or, with ``content_bytes``, a binary document)."""
    if not text and not content_bytes:
        raise InvalidRequest(f"document {source or document_id or '?'} is empty; nothing to index")
    return freki_pb2.IndexDocumentRequest(
        request_id=new_request_id(),
        tenant_id=tenant_id,
        document_id=document_id,
        source=source,
        content=text,
        content_bytes=content_bytes,
        content_type=content_type,
        metadata=dict(metadata or {}),
        owner_id=owner_id,
    )


def index_file_request(
    doc: DocumentFile, *, tenant_id: str, metadata: Mapping[str, str] | None = None
) -> freki_pb2.IndexDocumentRequest:
    """IndexDocument request for a file found by :func:`odin_client.protocol.files.discover`."""
    return index_text_request(
        "",
        content_bytes=read_document(doc),
        tenant_id=tenant_id,
        source=doc.source,
        content_type=doc.content_type,
        metadata=metadata,
    )
