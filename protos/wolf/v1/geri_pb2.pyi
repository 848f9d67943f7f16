import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from wolf.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FallbackKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FALLBACK_KIND_UNSPECIFIED: _ClassVar[FallbackKind]
    FALLBACK_KIND_BACKEND: _ClassVar[FallbackKind]
    FALLBACK_KIND_REPAIR: _ClassVar[FallbackKind]
    FALLBACK_KIND_EXTRACTIVE: _ClassVar[FallbackKind]
    FALLBACK_KIND_REVISION: _ClassVar[FallbackKind]
    FALLBACK_KIND_ABSTENTION: _ClassVar[FallbackKind]
    FALLBACK_KIND_WINDOW: _ClassVar[FallbackKind]
FALLBACK_KIND_UNSPECIFIED: FallbackKind
FALLBACK_KIND_BACKEND: FallbackKind
FALLBACK_KIND_REPAIR: FallbackKind
FALLBACK_KIND_EXTRACTIVE: FallbackKind
FALLBACK_KIND_REVISION: FallbackKind
FALLBACK_KIND_ABSTENTION: FallbackKind
FALLBACK_KIND_WINDOW: FallbackKind

class GenerateEvent(_message.Message):
    __slots__ = ("request_id", "text_delta", "thinking_delta", "final")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    THINKING_DELTA_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    text_delta: str
    thinking_delta: str
    final: _common_pb2.WolfResponse
    def __init__(self, request_id: _Optional[str] = ..., text_delta: _Optional[str] = ..., thinking_delta: _Optional[str] = ..., final: _Optional[_Union[_common_pb2.WolfResponse, _Mapping]] = ...) -> None: ...

class ListModelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ModelInfo(_message.Message):
    __slots__ = ("name", "backend", "size_bytes", "context_length", "family", "state", "priority")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    backend: str
    size_bytes: int
    context_length: int
    family: str
    state: str
    priority: int
    def __init__(self, name: _Optional[str] = ..., backend: _Optional[str] = ..., size_bytes: _Optional[int] = ..., context_length: _Optional[int] = ..., family: _Optional[str] = ..., state: _Optional[str] = ..., priority: _Optional[int] = ...) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("models", "default_model")
    MODELS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODEL_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    default_model: str
    def __init__(self, models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ..., default_model: _Optional[str] = ...) -> None: ...

class SessionRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "session_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    session_id: str
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., session_id: _Optional[str] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("session_id", "tenant_id", "owner_id", "turns", "updated_at", "expires_at", "user_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    tenant_id: str
    owner_id: str
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.ChatTurn]
    updated_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    user_id: str
    def __init__(self, session_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., owner_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[_common_pb2.ChatTurn, _Mapping]]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., user_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ("request_id", "deleted")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    deleted: bool
    def __init__(self, request_id: _Optional[str] = ..., deleted: _Optional[bool] = ...) -> None: ...

class DeleteOwnerSessionsRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "owner_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    owner_id: str
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., owner_id: _Optional[str] = ...) -> None: ...

class DeleteOwnerSessionsResponse(_message.Message):
    __slots__ = ("request_id", "sessions_deleted")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_DELETED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    sessions_deleted: int
    def __init__(self, request_id: _Optional[str] = ..., sessions_deleted: _Optional[int] = ...) -> None: ...

class AnswerOptions(_message.Message):
    __slots__ = ("min_score", "max_sources", "max_citations", "min_support", "model_abstains")
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_SOURCES_FIELD_NUMBER: _ClassVar[int]
    MAX_CITATIONS_FIELD_NUMBER: _ClassVar[int]
    MIN_SUPPORT_FIELD_NUMBER: _ClassVar[int]
    MODEL_ABSTAINS_FIELD_NUMBER: _ClassVar[int]
    min_score: float
    max_sources: int
    max_citations: int
    min_support: float
    model_abstains: bool
    def __init__(self, min_score: _Optional[float] = ..., max_sources: _Optional[int] = ..., max_citations: _Optional[int] = ..., min_support: _Optional[float] = ..., model_abstains: _Optional[bool] = ...) -> None: ...

class AnswerRequest(_message.Message):
    __slots__ = ("request", "options", "queries_used")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    QUERIES_USED_FIELD_NUMBER: _ClassVar[int]
    request: _common_pb2.WolfRequest
    options: AnswerOptions
    queries_used: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request: _Optional[_Union[_common_pb2.WolfRequest, _Mapping]] = ..., options: _Optional[_Union[AnswerOptions, _Mapping]] = ..., queries_used: _Optional[_Iterable[str]] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("marker", "document_id", "chunk_id", "chunk_index", "title", "score", "quote", "location", "source_number", "sentence_number")
    MARKER_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_INDEX_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    QUOTE_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SENTENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    marker: int
    document_id: str
    chunk_id: str
    chunk_index: int
    title: str
    score: float
    quote: str
    location: _common_pb2.SourceLocation
    source_number: int
    sentence_number: int
    def __init__(self, marker: _Optional[int] = ..., document_id: _Optional[str] = ..., chunk_id: _Optional[str] = ..., chunk_index: _Optional[int] = ..., title: _Optional[str] = ..., score: _Optional[float] = ..., quote: _Optional[str] = ..., location: _Optional[_Union[_common_pb2.SourceLocation, _Mapping]] = ..., source_number: _Optional[int] = ..., sentence_number: _Optional[int] = ...) -> None: ...

class GroundedAnswer(_message.Message):
    __slots__ = ("answered", "reason", "text", "summary", "key_details", "confidence", "citations", "extractive", "revised", "sources_used")
    ANSWERED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    KEY_DETAILS_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    EXTRACTIVE_FIELD_NUMBER: _ClassVar[int]
    REVISED_FIELD_NUMBER: _ClassVar[int]
    SOURCES_USED_FIELD_NUMBER: _ClassVar[int]
    answered: bool
    reason: str
    text: str
    summary: str
    key_details: _containers.RepeatedScalarFieldContainer[str]
    confidence: float
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    extractive: bool
    revised: bool
    sources_used: int
    def __init__(self, answered: _Optional[bool] = ..., reason: _Optional[str] = ..., text: _Optional[str] = ..., summary: _Optional[str] = ..., key_details: _Optional[_Iterable[str]] = ..., confidence: _Optional[float] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ..., extractive: _Optional[bool] = ..., revised: _Optional[bool] = ..., sources_used: _Optional[int] = ...) -> None: ...

class AnswerResponse(_message.Message):
    __slots__ = ("request_id", "answer", "llm_response", "metadata", "documents", "retrieval", "fallbacks", "cache_hit")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    LLM_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    FALLBACKS_FIELD_NUMBER: _ClassVar[int]
    CACHE_HIT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    answer: GroundedAnswer
    llm_response: _common_pb2.LLMResponse
    metadata: _common_pb2.ResponseMetadata
    documents: _containers.RepeatedCompositeFieldContainer[SourceDocument]
    retrieval: RetrievalMetadata
    fallbacks: _containers.RepeatedCompositeFieldContainer[Fallback]
    cache_hit: bool
    def __init__(self, request_id: _Optional[str] = ..., answer: _Optional[_Union[GroundedAnswer, _Mapping]] = ..., llm_response: _Optional[_Union[_common_pb2.LLMResponse, _Mapping]] = ..., metadata: _Optional[_Union[_common_pb2.ResponseMetadata, _Mapping]] = ..., documents: _Optional[_Iterable[_Union[SourceDocument, _Mapping]]] = ..., retrieval: _Optional[_Union[RetrievalMetadata, _Mapping]] = ..., fallbacks: _Optional[_Iterable[_Union[Fallback, _Mapping]]] = ..., cache_hit: _Optional[bool] = ...) -> None: ...

class SourceDocument(_message.Message):
    __slots__ = ("document_id", "source", "title", "best_relevance", "mean_relevance", "chunk_count", "shown", "cited")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    BEST_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    MEAN_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHOWN_FIELD_NUMBER: _ClassVar[int]
    CITED_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    source: str
    title: str
    best_relevance: float
    mean_relevance: float
    chunk_count: int
    shown: bool
    cited: bool
    def __init__(self, document_id: _Optional[str] = ..., source: _Optional[str] = ..., title: _Optional[str] = ..., best_relevance: _Optional[float] = ..., mean_relevance: _Optional[float] = ..., chunk_count: _Optional[int] = ..., shown: _Optional[bool] = ..., cited: _Optional[bool] = ...) -> None: ...

class RetrievalMetadata(_message.Message):
    __slots__ = ("documents_found", "chunks_found", "queries_used", "average_relevance", "reranking_applied", "index_epoch")
    DOCUMENTS_FOUND_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FOUND_FIELD_NUMBER: _ClassVar[int]
    QUERIES_USED_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    RERANKING_APPLIED_FIELD_NUMBER: _ClassVar[int]
    INDEX_EPOCH_FIELD_NUMBER: _ClassVar[int]
    documents_found: int
    chunks_found: int
    queries_used: _containers.RepeatedScalarFieldContainer[str]
    average_relevance: float
    reranking_applied: bool
    index_epoch: int
    def __init__(self, documents_found: _Optional[int] = ..., chunks_found: _Optional[int] = ..., queries_used: _Optional[_Iterable[str]] = ..., average_relevance: _Optional[float] = ..., reranking_applied: _Optional[bool] = ..., index_epoch: _Optional[int] = ...) -> None: ...

class Fallback(_message.Message):
    __slots__ = ("kind", "detail", "backend")
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    kind: FallbackKind
    detail: str
    backend: str
    def __init__(self, kind: _Optional[_Union[FallbackKind, str]] = ..., detail: _Optional[str] = ..., backend: _Optional[str] = ...) -> None: ...

class AnswerEvent(_message.Message):
    __slots__ = ("request_id", "text_delta", "final")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_DELTA_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    text_delta: str
    final: AnswerResponse
    def __init__(self, request_id: _Optional[str] = ..., text_delta: _Optional[str] = ..., final: _Optional[_Union[AnswerResponse, _Mapping]] = ...) -> None: ...

class RewriteQueryRequest(_message.Message):
    __slots__ = ("request", "variants")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    request: _common_pb2.WolfRequest
    variants: int
    def __init__(self, request: _Optional[_Union[_common_pb2.WolfRequest, _Mapping]] = ..., variants: _Optional[int] = ...) -> None: ...

class RewriteQueryResponse(_message.Message):
    __slots__ = ("request_id", "query", "rewritten", "variants", "warnings")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    VARIANTS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    query: str
    rewritten: bool
    variants: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., query: _Optional[str] = ..., rewritten: _Optional[bool] = ..., variants: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...
