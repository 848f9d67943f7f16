"""Validation of Freki requests. Every failure names the field and what was wrong.

Validation happens before any work, so a bad request changes nothing.
"""

from __future__ import annotations

import re
import uuid

from wolf.v1 import common_pb2, freki_pb2

from freki.ingest.quotas import METADATA_KEY, MetadataLimits, check_metadata
from freki.ingest.quotas import describe as _describe
from freki.search.filters import BOUNDS, CallerFilter, to_condition
from freki.settings import FrekiSettings
from freki.store.metadata import Metadata
from wolf_service.errors import InvalidArgument, ResourceExhausted
from wolf_service.identifiers import MAX_ID_BYTES, MAX_REQUEST_ID_CHARS, id_problem

_TENANT_RE = re.compile(r"^[A-Za-z0-9_.\-@]{1,128}$")
_META_KEY_RE = METADATA_KEY
# A page token is a point id (a UUID); anything much longer is not one.
MAX_PAGE_TOKEN = 64


def require_request_id(request_id: str) -> None:
    """request_id is mandatory so every call can be traced in logs and audit."""
    if not request_id.strip():
        raise InvalidArgument(f"request_id must be non-empty (got {_describe(request_id)})")
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        raise InvalidArgument(f"request_id must be at most {MAX_REQUEST_ID_CHARS} characters (got {len(request_id)})")


def tenant_of(tenant_id: str, settings: FrekiSettings) -> str:
    """Return the effective tenant, validating its form."""
    if not tenant_id:
        return settings.default_tenant
    if not _TENANT_RE.fullmatch(tenant_id):
        raise InvalidArgument(
            f"tenant_id must be 1-128 characters of letters, digits, '_', '.', '-', '@' (got {_describe(tenant_id)})"
        )
    return tenant_id


def require_document_id(document_id: str, field: str = "document_id") -> str:
    """A document id is any printable Unicode text up to MAX_ID_BYTES (wolf_service/identifiers.py)."""
    if not document_id:
        raise InvalidArgument(f"{field} must be non-empty (got \"\")")
    problem = id_problem(document_id)
    if problem is not None:
        raise InvalidArgument(
            f"{field} must be printable text of at most {MAX_ID_BYTES:,} UTF-8 bytes, but {problem} "
            f"(got {_describe(document_id)})"
        )
    return document_id


def metadata_limits(settings: FrekiSettings) -> MetadataLimits:
    """The metadata limits in force (``limits.metadata_*``)."""
    lim = settings.limits
    return MetadataLimits(max_keys=lim.metadata_keys, max_value_chars=lim.metadata_value_chars,
                          max_bytes=lim.metadata_bytes)


def validate_page_token(token: str) -> str | None:
    """A ListDocuments page token (None for the first page); never echoed back whole."""
    if not token:
        return None
    if len(token) > MAX_PAGE_TOKEN:
        raise InvalidArgument(f"page_token is {len(token):,} characters; a page token is at most {MAX_PAGE_TOKEN}")
    try:
        return str(uuid.UUID(token))
    except ValueError:
        raise InvalidArgument(f"page_token {_describe(token)} is not a token this server issued") from None


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
    if not 0 <= opts.neighbours <= settings.retrieval.max_neighbours:
        raise InvalidArgument(f"retrieval.neighbours must be between 0 and {settings.retrieval.max_neighbours} "
                              f"(retrieval.max_neighbours; got {opts.neighbours})")
    lim = settings.limits
    for field, count, limit in (("query_variants", len(opts.query_variants), lim.max_query_variants),
                                ("filters", len(opts.filters), lim.max_filters),
                                ("document_ids", len(opts.document_ids), lim.max_document_ids)):
        if count > limit:
            raise InvalidArgument(
                f"retrieval.{field} has {count:,} entries; the limit is {limit:,} (limits.max_{field})")
    for i, flt in enumerate(opts.filters):
        if len(flt.values) > lim.max_filter_values:
            raise InvalidArgument(f"retrieval.filters[{i}] ({_describe(flt.key)}) has {len(flt.values):,} values; "
                                  f"the limit is {lim.max_filter_values:,} (limits.max_filter_values)")
        if any(len(v) > lim.metadata_value_chars for v in flt.values):  # no stored value is longer: never matches
            raise InvalidArgument(f"retrieval.filters[{i}] ({_describe(flt.key)}) has a value over "
                                  f"{lim.metadata_value_chars:,} characters (limits.metadata_value_chars)")
        if not _META_KEY_RE.match(flt.key) and not flt.key.startswith("@"):
            raise InvalidArgument(f"retrieval.filters[{i}].key {_describe(flt.key)} is not a valid metadata key")
        caller = caller_filter(flt)
        if not flt.values and not caller.bounds:
            raise InvalidArgument(f"retrieval.filters[{i}] ({flt.key}) needs at least one value or a range bound")
        to_condition(caller, f"retrieval.filters[{i}]")
    for i, variant in enumerate(opts.query_variants):
        if not variant.strip():
            raise InvalidArgument(f"retrieval.query_variants[{i}] must be non-empty")
        if len(variant) > settings.max_prompt_chars:
            raise InvalidArgument(f"retrieval.query_variants[{i}] exceeds {settings.max_prompt_chars:,} characters")
    for i, doc_id in enumerate(opts.document_ids):
        require_document_id(doc_id, f"retrieval.document_ids[{i}]")
    tenant_of(request.tenant_id, settings)


def caller_filter(flt: common_pb2.MetadataFilter) -> CallerFilter:
    """A MetadataFilter message as the filter it states."""
    bounds = {name: getattr(flt, name) for name in BOUNDS if flt.HasField(name)}
    return CallerFilter(flt.key, tuple(flt.values), flt.exclude, flt.match == common_pb2.METADATA_MATCH_ALL,
                        bounds or None)


def request_metadata(request: freki_pb2.IndexDocumentRequest) -> Metadata:
    """An IndexDocument request's ``metadata`` and ``metadata_lists`` as one mapping."""
    metadata: Metadata = dict(request.metadata)
    for key, values in request.metadata_lists.items():
        if key in metadata:
            raise InvalidArgument(f"metadata key {_describe(key)} is in both metadata and metadata_lists; give it once")
        metadata[key] = list(values.values)
    return metadata


def validate_index(request: freki_pb2.IndexDocumentRequest, settings: FrekiSettings) -> None:
    """Check an IndexDocument request before anything is parsed or written."""
    require_request_id(request.request_id)
    tenant_of(request.tenant_id, settings)
    if request.document_id:
        require_document_id(request.document_id)
    elif not request.source:
        raise InvalidArgument("document_id must be non-empty when source is empty (got \"\" for both)")
    else:
        require_document_id(request.source, "source (the document id when document_id is empty)")
    if request.content and request.content_bytes:
        raise InvalidArgument("set either content (text) or content_bytes (binary), not both")
    if not request.content and not request.content_bytes:
        raise InvalidArgument("content or content_bytes must be non-empty: there is nothing to index")
    size = len(request.content_bytes) or len(request.content.encode("utf-8"))
    if size > settings.max_document_bytes:
        raise InvalidArgument(
            f"document is {size:,} bytes; the limit is {settings.max_document_bytes:,} "
            "(setting max_document_bytes, FREKI_MAX_DOCUMENT_BYTES)"
        )
    if request.owner_id and not _TENANT_RE.fullmatch(request.owner_id):
        raise InvalidArgument(f"owner_id {_describe(request.owner_id)} has invalid characters")
    if request.source and len(request.source) > 4096:
        raise InvalidArgument(f"source is {len(request.source):,} characters; the limit is 4,096")
    if request.content_type and len(request.content_type) > 256:
        raise InvalidArgument(f"content_type is {len(request.content_type):,} characters; the limit is 256")
    check_metadata(request_metadata(request), metadata_limits(settings))


def validate_embed(request: freki_pb2.EmbedRequest, settings: FrekiSettings) -> None:
    """Embed: 1..embed_max_texts non-empty texts of at most embed_max_chars characters."""
    lim = settings.limits
    if not request.texts:
        raise InvalidArgument("texts must hold at least one text (got none)")
    if len(request.texts) > lim.embed_max_texts:
        raise ResourceExhausted(f"texts holds {len(request.texts)} texts, over limits.embed_max_texts "
                                f"({lim.embed_max_texts}); split the request")
    for i, text in enumerate(request.texts):
        if not text.strip():
            raise InvalidArgument(f"texts[{i}] is empty")
        if len(text) > lim.embed_max_chars:
            raise ResourceExhausted(f"texts[{i}] is {len(text):,} characters, over limits.embed_max_chars "
                                    f"({lim.embed_max_chars:,})")
