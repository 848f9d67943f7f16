"""Validation of Freki requests. Every failure names the field and what was wrong.

Validation happens before any work, so a bad request changes nothing.
"""

from __future__ import annotations

import re

from wolf.v1 import common_pb2, freki_pb2

from freki.settings import FrekiSettings
from wolf_service.errors import InvalidArgument

_ID_RE = re.compile(r"^[\w.\-:/@+ ]{1,512}$")
_TENANT_RE = re.compile(r"^[A-Za-z0-9_.\-@]{1,128}$")
_META_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


def _describe(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "…")


def require_request_id(request_id: str) -> None:
    """request_id is mandatory so every call can be traced in logs and audit."""
    if not request_id.strip():
        raise InvalidArgument(f"request_id must be non-empty (got {_describe(request_id)})")
    if len(request_id) > 256:
        raise InvalidArgument(f"request_id must be at most 256 characters (got {len(request_id)})")


def tenant_of(tenant_id: str, settings: FrekiSettings) -> str:
    """Return the effective tenant, validating its form."""
    if not tenant_id:
        return settings.default_tenant
    if not _TENANT_RE.match(tenant_id):
        raise InvalidArgument(
            f"tenant_id must be 1-128 characters of letters, digits, '_', '.', '-', '@' (got {_describe(tenant_id)})"
        )
    return tenant_id


def require_document_id(document_id: str, field: str = "document_id") -> str:
    """A document id must be non-empty printable text of reasonable length."""
    if not document_id:
        raise InvalidArgument(f"{field} must be non-empty (got \"\")")
    if not _ID_RE.match(document_id):
        raise InvalidArgument(
            f"{field} must be 1-512 characters of letters, digits, spaces and . - _ : / @ + "
            f"(got {_describe(document_id)})"
        )
    return document_id


def validate_metadata(metadata: dict[str, str], field: str = "metadata") -> None:
    """Metadata keys become payload keys; keep them to a safe, filterable form."""
    for key, value in metadata.items():
        if not _META_KEY_RE.match(key):
            raise InvalidArgument(
                f"{field} key {_describe(key)} must start with a letter or '_' and contain only "
                "letters, digits, '_', '.', '-' (max 128)"
            )
        if len(value) > 8192:
            raise InvalidArgument(f"{field}[{key!r}] is {len(value)} characters; the limit is 8192")


def validate_retrieve(request: common_pb2.WolfRequest, settings: FrekiSettings) -> None:
    """Check a RetrieveContext request as the design specifies."""
    require_request_id(request.request_id)
    if request.model_type != common_pb2.RAG:
        name = common_pb2.ModelType.Name(request.model_type) if request.model_type in (0, 1, 2) else str(
            request.model_type
        )
        raise InvalidArgument(f"model_type must be RAG for Freki (got {name})")
    if not request.prompt.strip():
        raise InvalidArgument("prompt must be non-empty (got an empty or blank prompt)")
    if len(request.prompt) > settings.max_prompt_chars:
        raise InvalidArgument(
            f"prompt is {len(request.prompt):,} characters; the limit is {settings.max_prompt_chars:,}"
        )
    opts = request.retrieval
    if opts.top_k < 0 or opts.top_k > settings.retrieval.max_top_k:
        raise InvalidArgument(
            f"retrieval.top_k must be between 0 (server default) and {settings.retrieval.max_top_k} "
            f"(got {opts.top_k})"
        )
    if opts.HasField("score_threshold") and not 0.0 <= opts.score_threshold <= 1.0:
        raise InvalidArgument(f"retrieval.score_threshold must be in [0, 1] (got {opts.score_threshold})")
    if opts.HasField("mmr_diversity") and not 0.0 <= opts.mmr_diversity <= 1.0:
        raise InvalidArgument(f"retrieval.mmr_diversity must be in [0, 1] (got {opts.mmr_diversity})")
    for i, flt in enumerate(opts.filters):
        if not _META_KEY_RE.match(flt.key):
            raise InvalidArgument(f"retrieval.filters[{i}].key {_describe(flt.key)} is not a valid metadata key")
        if not flt.values:
            raise InvalidArgument(f"retrieval.filters[{i}] ({flt.key}) needs at least one value")
    for i, variant in enumerate(opts.query_variants):
        if not variant.strip():
            raise InvalidArgument(f"retrieval.query_variants[{i}] must be non-empty")
        if len(variant) > settings.max_prompt_chars:
            raise InvalidArgument(f"retrieval.query_variants[{i}] exceeds {settings.max_prompt_chars:,} characters")
    for i, doc_id in enumerate(opts.document_ids):
        require_document_id(doc_id, f"retrieval.document_ids[{i}]")
    tenant_of(request.tenant_id, settings)


def validate_index(request: freki_pb2.IndexDocumentRequest, settings: FrekiSettings) -> None:
    """Check an IndexDocument request before anything is parsed or written."""
    require_request_id(request.request_id)
    tenant_of(request.tenant_id, settings)
    if request.document_id:
        require_document_id(request.document_id)
    elif not request.source:
        raise InvalidArgument("document_id must be non-empty when source is empty (got \"\" for both)")
    if request.content and request.content_bytes:
        raise InvalidArgument("set either content (text) or content_bytes (binary), not both")
    if not request.content and not request.content_bytes:
        raise InvalidArgument("content or content_bytes must be non-empty: there is nothing to index")
    size = len(request.content_bytes) or len(request.content.encode("utf-8"))
    if size > settings.max_document_bytes:
        raise InvalidArgument(
            f"document is {size:,} bytes; the limit is {settings.max_document_bytes:,} (FREKI_MAX_DOCUMENT_BYTES)"
        )
    if request.owner_id and not _TENANT_RE.match(request.owner_id):
        raise InvalidArgument(f"owner_id {_describe(request.owner_id)} has invalid characters")
    validate_metadata(dict(request.metadata))
