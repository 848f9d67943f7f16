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

class IndexOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDEX_OUTCOME_UNSPECIFIED: _ClassVar[IndexOutcome]
    INDEX_OUTCOME_CREATED: _ClassVar[IndexOutcome]
    INDEX_OUTCOME_UPDATED: _ClassVar[IndexOutcome]
    INDEX_OUTCOME_UNCHANGED: _ClassVar[IndexOutcome]
INDEX_OUTCOME_UNSPECIFIED: IndexOutcome
INDEX_OUTCOME_CREATED: IndexOutcome
INDEX_OUTCOME_UPDATED: IndexOutcome
INDEX_OUTCOME_UNCHANGED: IndexOutcome

class LinkListRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "document_id", "page_size")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    document_id: str
    page_size: int
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class LinkListResponse(_message.Message):
    __slots__ = ("request_id", "document_id", "outgoing", "backlinks", "truncated")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_FIELD_NUMBER: _ClassVar[int]
    BACKLINKS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    document_id: str
    outgoing: _containers.RepeatedCompositeFieldContainer[_common_pb2.GraphEdge]
    backlinks: _containers.RepeatedCompositeFieldContainer[_common_pb2.GraphEdge]
    truncated: bool
    def __init__(self, request_id: _Optional[str] = ..., document_id: _Optional[str] = ..., outgoing: _Optional[_Iterable[_Union[_common_pb2.GraphEdge, _Mapping]]] = ..., backlinks: _Optional[_Iterable[_Union[_common_pb2.GraphEdge, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class FeedbackRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "query_id", "document_id", "rating", "comment")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    query_id: str
    document_id: str
    rating: int
    comment: str
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., query_id: _Optional[str] = ..., document_id: _Optional[str] = ..., rating: _Optional[int] = ..., comment: _Optional[str] = ...) -> None: ...

class FeedbackResponse(_message.Message):
    __slots__ = ("request_id", "query_id", "rating")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    RATING_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    query_id: str
    rating: int
    def __init__(self, request_id: _Optional[str] = ..., query_id: _Optional[str] = ..., rating: _Optional[int] = ...) -> None: ...

class IndexDocumentsResult(_message.Message):
    __slots__ = ("request_id", "document_id", "response", "error_code", "error_message")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    document_id: str
    response: IndexDocumentResponse
    error_code: str
    error_message: str
    def __init__(self, request_id: _Optional[str] = ..., document_id: _Optional[str] = ..., response: _Optional[_Union[IndexDocumentResponse, _Mapping]] = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class IndexDocumentRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "document_id", "source", "content", "content_type", "metadata", "content_bytes", "owner_id", "force_full_reindex", "metadata_lists", "access_groups")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MetadataListsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.MetadataValues
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.MetadataValues, _Mapping]] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONTENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    FORCE_FULL_REINDEX_FIELD_NUMBER: _ClassVar[int]
    METADATA_LISTS_FIELD_NUMBER: _ClassVar[int]
    ACCESS_GROUPS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    document_id: str
    source: str
    content: str
    content_type: str
    metadata: _containers.ScalarMap[str, str]
    content_bytes: bytes
    owner_id: str
    force_full_reindex: bool
    metadata_lists: _containers.MessageMap[str, _common_pb2.MetadataValues]
    access_groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ..., source: _Optional[str] = ..., content: _Optional[str] = ..., content_type: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., content_bytes: _Optional[bytes] = ..., owner_id: _Optional[str] = ..., force_full_reindex: _Optional[bool] = ..., metadata_lists: _Optional[_Mapping[str, _common_pb2.MetadataValues]] = ..., access_groups: _Optional[_Iterable[str]] = ...) -> None: ...

class IndexDocumentResponse(_message.Message):
    __slots__ = ("request_id", "document_id", "chunk_count", "chunks_embedded", "chunks_unchanged", "chunks_deleted", "duration_ms", "changed", "outcome", "full_reindex", "content_hash")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_EMBEDDED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DELETED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    FULL_REINDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    document_id: str
    chunk_count: int
    chunks_embedded: int
    chunks_unchanged: int
    chunks_deleted: int
    duration_ms: int
    changed: bool
    outcome: IndexOutcome
    full_reindex: bool
    content_hash: str
    def __init__(self, request_id: _Optional[str] = ..., document_id: _Optional[str] = ..., chunk_count: _Optional[int] = ..., chunks_embedded: _Optional[int] = ..., chunks_unchanged: _Optional[int] = ..., chunks_deleted: _Optional[int] = ..., duration_ms: _Optional[int] = ..., changed: _Optional[bool] = ..., outcome: _Optional[_Union[IndexOutcome, str]] = ..., full_reindex: _Optional[bool] = ..., content_hash: _Optional[str] = ...) -> None: ...

class DeleteDocumentRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "document_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    document_id: str
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class DeleteDocumentResponse(_message.Message):
    __slots__ = ("request_id", "document_id", "chunks_deleted")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DELETED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    document_id: str
    chunks_deleted: int
    def __init__(self, request_id: _Optional[str] = ..., document_id: _Optional[str] = ..., chunks_deleted: _Optional[int] = ...) -> None: ...

class GetDocumentRequest(_message.Message):
    __slots__ = ("tenant_id", "document_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    document_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ...) -> None: ...

class DocumentInfo(_message.Message):
    __slots__ = ("document_id", "tenant_id", "owner_id", "source", "content_type", "content_hash", "chunk_count", "metadata", "indexed_at", "embedding_model", "metadata_lists", "embedding_dimension", "document_type", "languages", "access_groups")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MetadataListsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.MetadataValues
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.MetadataValues, _Mapping]] = ...) -> None: ...
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    INDEXED_AT_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    METADATA_LISTS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGES_FIELD_NUMBER: _ClassVar[int]
    ACCESS_GROUPS_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    tenant_id: str
    owner_id: str
    source: str
    content_type: str
    content_hash: str
    chunk_count: int
    metadata: _containers.ScalarMap[str, str]
    indexed_at: _timestamp_pb2.Timestamp
    embedding_model: str
    metadata_lists: _containers.MessageMap[str, _common_pb2.MetadataValues]
    embedding_dimension: int
    document_type: str
    languages: _containers.RepeatedScalarFieldContainer[str]
    access_groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, document_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., owner_id: _Optional[str] = ..., source: _Optional[str] = ..., content_type: _Optional[str] = ..., content_hash: _Optional[str] = ..., chunk_count: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ..., indexed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., embedding_model: _Optional[str] = ..., metadata_lists: _Optional[_Mapping[str, _common_pb2.MetadataValues]] = ..., embedding_dimension: _Optional[int] = ..., document_type: _Optional[str] = ..., languages: _Optional[_Iterable[str]] = ..., access_groups: _Optional[_Iterable[str]] = ...) -> None: ...

class ListDocumentsRequest(_message.Message):
    __slots__ = ("tenant_id", "page_size", "page_token", "owner_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    page_size: int
    page_token: str
    owner_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., owner_id: _Optional[str] = ...) -> None: ...

class ListDocumentsResponse(_message.Message):
    __slots__ = ("documents", "next_page_token")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[DocumentInfo]
    next_page_token: str
    def __init__(self, documents: _Optional[_Iterable[_Union[DocumentInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetIndexStatusRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class SkippedFile(_message.Message):
    __slots__ = ("path", "reason", "at")
    PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    path: str
    reason: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, path: _Optional[str] = ..., reason: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class WatchFolderStatus(_message.Message):
    __slots__ = ("path", "files_indexed", "files_pending", "skipped")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_INDEXED_FIELD_NUMBER: _ClassVar[int]
    FILES_PENDING_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    path: str
    files_indexed: int
    files_pending: int
    skipped: _containers.RepeatedCompositeFieldContainer[SkippedFile]
    def __init__(self, path: _Optional[str] = ..., files_indexed: _Optional[int] = ..., files_pending: _Optional[int] = ..., skipped: _Optional[_Iterable[_Union[SkippedFile, _Mapping]]] = ...) -> None: ...

class IndexStatus(_message.Message):
    __slots__ = ("document_count", "chunk_count", "embedding_model", "embedding_dimension", "store_backend", "collection", "watch_folders", "queue_depth", "embedding_models", "migration", "configured_embedding_model", "health", "health_reasons", "disk", "quarantined_chunks", "retention")
    DOCUMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    STORE_BACKEND_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    WATCH_FOLDERS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEPTH_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODELS_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_FIELD_NUMBER: _ClassVar[int]
    CONFIGURED_EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    HEALTH_REASONS_FIELD_NUMBER: _ClassVar[int]
    DISK_FIELD_NUMBER: _ClassVar[int]
    QUARANTINED_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    document_count: int
    chunk_count: int
    embedding_model: str
    embedding_dimension: int
    store_backend: str
    collection: str
    watch_folders: _containers.RepeatedCompositeFieldContainer[WatchFolderStatus]
    queue_depth: int
    embedding_models: _containers.RepeatedCompositeFieldContainer[EmbeddingModelStatus]
    migration: MigrationStatus
    configured_embedding_model: str
    health: str
    health_reasons: _containers.RepeatedScalarFieldContainer[str]
    disk: DiskStatus
    quarantined_chunks: _containers.RepeatedCompositeFieldContainer[QuarantinedChunk]
    retention: _containers.RepeatedCompositeFieldContainer[RetentionPolicyStatus]
    def __init__(self, document_count: _Optional[int] = ..., chunk_count: _Optional[int] = ..., embedding_model: _Optional[str] = ..., embedding_dimension: _Optional[int] = ..., store_backend: _Optional[str] = ..., collection: _Optional[str] = ..., watch_folders: _Optional[_Iterable[_Union[WatchFolderStatus, _Mapping]]] = ..., queue_depth: _Optional[int] = ..., embedding_models: _Optional[_Iterable[_Union[EmbeddingModelStatus, _Mapping]]] = ..., migration: _Optional[_Union[MigrationStatus, _Mapping]] = ..., configured_embedding_model: _Optional[str] = ..., health: _Optional[str] = ..., health_reasons: _Optional[_Iterable[str]] = ..., disk: _Optional[_Union[DiskStatus, _Mapping]] = ..., quarantined_chunks: _Optional[_Iterable[_Union[QuarantinedChunk, _Mapping]]] = ..., retention: _Optional[_Iterable[_Union[RetentionPolicyStatus, _Mapping]]] = ...) -> None: ...

class DiskStatus(_message.Message):
    __slots__ = ("path", "free_bytes", "total_bytes", "level", "refuse_below_bytes", "warn_below_bytes")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    REFUSE_BELOW_BYTES_FIELD_NUMBER: _ClassVar[int]
    WARN_BELOW_BYTES_FIELD_NUMBER: _ClassVar[int]
    path: str
    free_bytes: int
    total_bytes: int
    level: str
    refuse_below_bytes: int
    warn_below_bytes: int
    def __init__(self, path: _Optional[str] = ..., free_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ..., level: _Optional[str] = ..., refuse_below_bytes: _Optional[int] = ..., warn_below_bytes: _Optional[int] = ...) -> None: ...

class QuarantinedChunk(_message.Message):
    __slots__ = ("chunk_id", "document_id", "tenant_id", "collection", "reason", "detected_at", "heal")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETECTED_AT_FIELD_NUMBER: _ClassVar[int]
    HEAL_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    document_id: str
    tenant_id: str
    collection: str
    reason: str
    detected_at: str
    heal: str
    def __init__(self, chunk_id: _Optional[str] = ..., document_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., collection: _Optional[str] = ..., reason: _Optional[str] = ..., detected_at: _Optional[str] = ..., heal: _Optional[str] = ...) -> None: ...

class RetentionPolicyStatus(_message.Message):
    __slots__ = ("name", "tenant_id", "match", "max_age_days", "age_field", "last_run", "next_run", "documents_deleted", "last_error")
    class MatchEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_DAYS_FIELD_NUMBER: _ClassVar[int]
    AGE_FIELD_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_DELETED_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    tenant_id: str
    match: _containers.ScalarMap[str, str]
    max_age_days: float
    age_field: str
    last_run: _timestamp_pb2.Timestamp
    next_run: _timestamp_pb2.Timestamp
    documents_deleted: int
    last_error: str
    def __init__(self, name: _Optional[str] = ..., tenant_id: _Optional[str] = ..., match: _Optional[_Mapping[str, str]] = ..., max_age_days: _Optional[float] = ..., age_field: _Optional[str] = ..., last_run: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_run: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., documents_deleted: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...

class EmbeddingModelStatus(_message.Message):
    __slots__ = ("model", "dimension", "collection", "document_count", "chunk_count", "document_types", "standard", "available")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    STANDARD_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    model: str
    dimension: int
    collection: str
    document_count: int
    chunk_count: int
    document_types: _containers.RepeatedScalarFieldContainer[str]
    standard: bool
    available: bool
    def __init__(self, model: _Optional[str] = ..., dimension: _Optional[int] = ..., collection: _Optional[str] = ..., document_count: _Optional[int] = ..., chunk_count: _Optional[int] = ..., document_types: _Optional[_Iterable[str]] = ..., standard: _Optional[bool] = ..., available: _Optional[bool] = ...) -> None: ...

class MigrationStatus(_message.Message):
    __slots__ = ("state", "model_from", "model_to", "started_at", "documents_done", "documents_total", "error")
    STATE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FROM_FIELD_NUMBER: _ClassVar[int]
    MODEL_TO_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_DONE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    state: str
    model_from: str
    model_to: str
    started_at: str
    documents_done: int
    documents_total: int
    error: str
    def __init__(self, state: _Optional[str] = ..., model_from: _Optional[str] = ..., model_to: _Optional[str] = ..., started_at: _Optional[str] = ..., documents_done: _Optional[int] = ..., documents_total: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class FullReindexRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "document_id", "migrate_model")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    MIGRATE_MODEL_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    document_id: str
    migrate_model: bool
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., document_id: _Optional[str] = ..., migrate_model: _Optional[bool] = ...) -> None: ...

class FullReindexResponse(_message.Message):
    __slots__ = ("request_id", "documents_reindexed", "chunks_embedded", "duration_ms", "documents_rechunked", "documents_reembedded_only", "note", "migration")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_REINDEXED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_EMBEDDED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_RECHUNKED_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_REEMBEDDED_ONLY_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    documents_reindexed: int
    chunks_embedded: int
    duration_ms: int
    documents_rechunked: int
    documents_reembedded_only: int
    note: str
    migration: MigrationStatus
    def __init__(self, request_id: _Optional[str] = ..., documents_reindexed: _Optional[int] = ..., chunks_embedded: _Optional[int] = ..., duration_ms: _Optional[int] = ..., documents_rechunked: _Optional[int] = ..., documents_reembedded_only: _Optional[int] = ..., note: _Optional[str] = ..., migration: _Optional[_Union[MigrationStatus, _Mapping]] = ...) -> None: ...

class DeleteOwnerDataRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "owner_id")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    owner_id: str
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., owner_id: _Optional[str] = ...) -> None: ...

class DeleteOwnerDataResponse(_message.Message):
    __slots__ = ("request_id", "documents_deleted", "chunks_deleted")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_DELETED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DELETED_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    documents_deleted: int
    chunks_deleted: int
    def __init__(self, request_id: _Optional[str] = ..., documents_deleted: _Optional[int] = ..., chunks_deleted: _Optional[int] = ...) -> None: ...

class ExportOwnerDataRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "owner_id", "include_vectors")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_VECTORS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    owner_id: str
    include_vectors: bool
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., owner_id: _Optional[str] = ..., include_vectors: _Optional[bool] = ...) -> None: ...

class ExportedChunk(_message.Message):
    __slots__ = ("chunk_id", "document_id", "chunk_index", "content", "metadata", "vector")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    document_id: str
    chunk_index: int
    content: str
    metadata: _containers.ScalarMap[str, str]
    vector: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, chunk_id: _Optional[str] = ..., document_id: _Optional[str] = ..., chunk_index: _Optional[int] = ..., content: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., vector: _Optional[_Iterable[float]] = ...) -> None: ...

class ExportedLinks(_message.Message):
    __slots__ = ("document_id", "outgoing")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    outgoing: _containers.RepeatedCompositeFieldContainer[_common_pb2.GraphEdge]
    def __init__(self, document_id: _Optional[str] = ..., outgoing: _Optional[_Iterable[_Union[_common_pb2.GraphEdge, _Mapping]]] = ...) -> None: ...

class SearchLogEntry(_message.Message):
    __slots__ = ("at", "query_id", "query", "mode", "took_ms", "hits")
    AT_FIELD_NUMBER: _ClassVar[int]
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    TOOK_MS_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    at: str
    query_id: str
    query: str
    mode: str
    took_ms: int
    hits: _containers.RepeatedCompositeFieldContainer[SearchLogHit]
    def __init__(self, at: _Optional[str] = ..., query_id: _Optional[str] = ..., query: _Optional[str] = ..., mode: _Optional[str] = ..., took_ms: _Optional[int] = ..., hits: _Optional[_Iterable[_Union[SearchLogHit, _Mapping]]] = ...) -> None: ...

class SearchLogHit(_message.Message):
    __slots__ = ("document_id", "chunk_id", "score")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    chunk_id: str
    score: float
    def __init__(self, document_id: _Optional[str] = ..., chunk_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class ExportRecord(_message.Message):
    __slots__ = ("document", "chunk", "links", "search")
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    document: DocumentInfo
    chunk: ExportedChunk
    links: ExportedLinks
    search: SearchLogEntry
    def __init__(self, document: _Optional[_Union[DocumentInfo, _Mapping]] = ..., chunk: _Optional[_Union[ExportedChunk, _Mapping]] = ..., links: _Optional[_Union[ExportedLinks, _Mapping]] = ..., search: _Optional[_Union[SearchLogEntry, _Mapping]] = ...) -> None: ...

class EmbedRequest(_message.Message):
    __slots__ = ("request_id", "tenant_id", "texts")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tenant_id: str
    texts: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., texts: _Optional[_Iterable[str]] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("request_id", "embeddings", "model", "dimension", "prompt_tokens")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    embeddings: _containers.RepeatedCompositeFieldContainer[Embedding]
    model: str
    dimension: int
    prompt_tokens: int
    def __init__(self, request_id: _Optional[str] = ..., embeddings: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., model: _Optional[str] = ..., dimension: _Optional[int] = ..., prompt_tokens: _Optional[int] = ...) -> None: ...

class CreateBackupRequest(_message.Message):
    __slots__ = ("request_id", "name", "tar")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TAR_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    name: str
    tar: bool
    def __init__(self, request_id: _Optional[str] = ..., name: _Optional[str] = ..., tar: _Optional[bool] = ...) -> None: ...

class CreateBackupResponse(_message.Message):
    __slots__ = ("request_id", "path", "files", "bytes", "documents", "chunks", "write_pause_ms", "duration_ms", "created_at")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    WRITE_PAUSE_MS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    path: str
    files: int
    bytes: int
    documents: int
    chunks: int
    write_pause_ms: int
    duration_ms: int
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, request_id: _Optional[str] = ..., path: _Optional[str] = ..., files: _Optional[int] = ..., bytes: _Optional[int] = ..., documents: _Optional[int] = ..., chunks: _Optional[int] = ..., write_pause_ms: _Optional[int] = ..., duration_ms: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
