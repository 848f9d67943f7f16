import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModelType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_TYPE_UNSPECIFIED: _ClassVar[ModelType]
    RAG: _ClassVar[ModelType]
    LLM: _ClassVar[ModelType]

class SearchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_MODE_UNSPECIFIED: _ClassVar[SearchMode]
    SEARCH_MODE_DENSE: _ClassVar[SearchMode]
    SEARCH_MODE_SPARSE: _ClassVar[SearchMode]
    SEARCH_MODE_HYBRID: _ClassVar[SearchMode]

class MetadataMatch(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    METADATA_MATCH_ANY: _ClassVar[MetadataMatch]
    METADATA_MATCH_ALL: _ClassVar[MetadataMatch]
MODEL_TYPE_UNSPECIFIED: ModelType
RAG: ModelType
LLM: ModelType
SEARCH_MODE_UNSPECIFIED: SearchMode
SEARCH_MODE_DENSE: SearchMode
SEARCH_MODE_SPARSE: SearchMode
SEARCH_MODE_HYBRID: SearchMode
METADATA_MATCH_ANY: MetadataMatch
METADATA_MATCH_ALL: MetadataMatch

class RequestMetadata(_message.Message):
    __slots__ = ("session_id", "max_tokens", "temperature", "language", "owner_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    max_tokens: int
    temperature: float
    language: str
    owner_id: str
    def __init__(self, session_id: _Optional[str] = ..., max_tokens: _Optional[int] = ..., temperature: _Optional[float] = ..., language: _Optional[str] = ..., owner_id: _Optional[str] = ...) -> None: ...

class RetrievedDocument(_message.Message):
    __slots__ = ("document_id", "content", "relevance_score", "metadata", "chunk_id", "chunk_index", "source", "metadata_lists", "explanation", "embedding_model", "location", "neighbour_of", "overlap_chars")
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
        value: MetadataValues
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MetadataValues, _Mapping]] = ...) -> None: ...
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_SCORE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    CHUNK_INDEX_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_LISTS_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    NEIGHBOUR_OF_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_CHARS_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    content: str
    relevance_score: float
    metadata: _containers.ScalarMap[str, str]
    chunk_id: str
    chunk_index: int
    source: str
    metadata_lists: _containers.MessageMap[str, MetadataValues]
    explanation: Explanation
    embedding_model: str
    location: SourceLocation
    neighbour_of: str
    overlap_chars: int
    def __init__(self, document_id: _Optional[str] = ..., content: _Optional[str] = ..., relevance_score: _Optional[float] = ..., metadata: _Optional[_Mapping[str, str]] = ..., chunk_id: _Optional[str] = ..., chunk_index: _Optional[int] = ..., source: _Optional[str] = ..., metadata_lists: _Optional[_Mapping[str, MetadataValues]] = ..., explanation: _Optional[_Union[Explanation, _Mapping]] = ..., embedding_model: _Optional[str] = ..., location: _Optional[_Union[SourceLocation, _Mapping]] = ..., neighbour_of: _Optional[str] = ..., overlap_chars: _Optional[int] = ...) -> None: ...

class SourceLocation(_message.Message):
    __slots__ = ("page", "slide", "sheet", "heading_path", "label")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SLIDE_FIELD_NUMBER: _ClassVar[int]
    SHEET_FIELD_NUMBER: _ClassVar[int]
    HEADING_PATH_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    page: int
    slide: int
    sheet: str
    heading_path: _containers.RepeatedScalarFieldContainer[str]
    label: str
    def __init__(self, page: _Optional[int] = ..., slide: _Optional[int] = ..., sheet: _Optional[str] = ..., heading_path: _Optional[_Iterable[str]] = ..., label: _Optional[str] = ...) -> None: ...

class Explanation(_message.Message):
    __slots__ = ("dense_score", "sparse_score", "fused_score", "graph_bonus", "edge_bonus", "centrality", "type_weight", "graph_neighbour", "edges", "matched_terms")
    DENSE_SCORE_FIELD_NUMBER: _ClassVar[int]
    SPARSE_SCORE_FIELD_NUMBER: _ClassVar[int]
    FUSED_SCORE_FIELD_NUMBER: _ClassVar[int]
    GRAPH_BONUS_FIELD_NUMBER: _ClassVar[int]
    EDGE_BONUS_FIELD_NUMBER: _ClassVar[int]
    CENTRALITY_FIELD_NUMBER: _ClassVar[int]
    TYPE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    GRAPH_NEIGHBOUR_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    MATCHED_TERMS_FIELD_NUMBER: _ClassVar[int]
    dense_score: float
    sparse_score: float
    fused_score: float
    graph_bonus: float
    edge_bonus: float
    centrality: float
    type_weight: float
    graph_neighbour: bool
    edges: _containers.RepeatedCompositeFieldContainer[GraphEdge]
    matched_terms: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, dense_score: _Optional[float] = ..., sparse_score: _Optional[float] = ..., fused_score: _Optional[float] = ..., graph_bonus: _Optional[float] = ..., edge_bonus: _Optional[float] = ..., centrality: _Optional[float] = ..., type_weight: _Optional[float] = ..., graph_neighbour: _Optional[bool] = ..., edges: _Optional[_Iterable[_Union[GraphEdge, _Mapping]]] = ..., matched_terms: _Optional[_Iterable[str]] = ...) -> None: ...

class GraphEdge(_message.Message):
    __slots__ = ("source_document_id", "target_document_id", "kind", "confidence", "target", "rule")
    SOURCE_DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    source_document_id: str
    target_document_id: str
    kind: str
    confidence: float
    target: str
    rule: str
    def __init__(self, source_document_id: _Optional[str] = ..., target_document_id: _Optional[str] = ..., kind: _Optional[str] = ..., confidence: _Optional[float] = ..., target: _Optional[str] = ..., rule: _Optional[str] = ...) -> None: ...

class MetadataValues(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, values: _Optional[_Iterable[str]] = ...) -> None: ...

class RAGContext(_message.Message):
    __slots__ = ("documents", "retrieval_score", "score_threshold", "below_threshold", "query_id", "queries", "reranked", "index_epoch")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    SCORE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    BELOW_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    QUERY_ID_FIELD_NUMBER: _ClassVar[int]
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    RERANKED_FIELD_NUMBER: _ClassVar[int]
    INDEX_EPOCH_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[RetrievedDocument]
    retrieval_score: float
    score_threshold: float
    below_threshold: int
    query_id: str
    queries: _containers.RepeatedScalarFieldContainer[str]
    reranked: bool
    index_epoch: int
    def __init__(self, documents: _Optional[_Iterable[_Union[RetrievedDocument, _Mapping]]] = ..., retrieval_score: _Optional[float] = ..., score_threshold: _Optional[float] = ..., below_threshold: _Optional[int] = ..., query_id: _Optional[str] = ..., queries: _Optional[_Iterable[str]] = ..., reranked: _Optional[bool] = ..., index_epoch: _Optional[int] = ...) -> None: ...

class LLMResponse(_message.Message):
    __slots__ = ("text", "tokens_used", "latency_ms", "cost", "model_used", "prompt_tokens", "completion_tokens", "thinking", "finish_reason", "json", "tool_calls", "backend", "repair_attempts")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_USED_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    MODEL_USED_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    THINKING_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    REPAIR_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    text: str
    tokens_used: int
    latency_ms: int
    cost: float
    model_used: str
    prompt_tokens: int
    completion_tokens: int
    thinking: str
    finish_reason: str
    json: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    backend: str
    repair_attempts: int
    def __init__(self, text: _Optional[str] = ..., tokens_used: _Optional[int] = ..., latency_ms: _Optional[int] = ..., cost: _Optional[float] = ..., model_used: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., thinking: _Optional[str] = ..., finish_reason: _Optional[str] = ..., json: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., backend: _Optional[str] = ..., repair_attempts: _Optional[int] = ...) -> None: ...

class ResponseMetadata(_message.Message):
    __slots__ = ("timestamp", "error", "warnings", "dropped_document_ids", "duration_ms")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    timestamp: _timestamp_pb2.Timestamp
    error: str
    warnings: _containers.RepeatedScalarFieldContainer[str]
    dropped_document_ids: _containers.RepeatedScalarFieldContainer[str]
    duration_ms: int
    def __init__(self, timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[str] = ..., warnings: _Optional[_Iterable[str]] = ..., dropped_document_ids: _Optional[_Iterable[str]] = ..., duration_ms: _Optional[int] = ...) -> None: ...

class MetadataFilter(_message.Message):
    __slots__ = ("key", "values", "exclude", "match", "gte", "gt", "lte", "lt")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    GTE_FIELD_NUMBER: _ClassVar[int]
    GT_FIELD_NUMBER: _ClassVar[int]
    LTE_FIELD_NUMBER: _ClassVar[int]
    LT_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    exclude: bool
    match: MetadataMatch
    gte: str
    gt: str
    lte: str
    lt: str
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ..., exclude: _Optional[bool] = ..., match: _Optional[_Union[MetadataMatch, str]] = ..., gte: _Optional[str] = ..., gt: _Optional[str] = ..., lte: _Optional[str] = ..., lt: _Optional[str] = ...) -> None: ...

class RetrievalOptions(_message.Message):
    __slots__ = ("top_k", "score_threshold", "filters", "mode", "query_variants", "document_ids", "mmr_diversity", "rerank", "graph_expand", "explain", "neighbours")
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SCORE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    QUERY_VARIANTS_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    MMR_DIVERSITY_FIELD_NUMBER: _ClassVar[int]
    RERANK_FIELD_NUMBER: _ClassVar[int]
    GRAPH_EXPAND_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    NEIGHBOURS_FIELD_NUMBER: _ClassVar[int]
    top_k: int
    score_threshold: float
    filters: _containers.RepeatedCompositeFieldContainer[MetadataFilter]
    mode: SearchMode
    query_variants: _containers.RepeatedScalarFieldContainer[str]
    document_ids: _containers.RepeatedScalarFieldContainer[str]
    mmr_diversity: float
    rerank: bool
    graph_expand: bool
    explain: bool
    neighbours: int
    def __init__(self, top_k: _Optional[int] = ..., score_threshold: _Optional[float] = ..., filters: _Optional[_Iterable[_Union[MetadataFilter, _Mapping]]] = ..., mode: _Optional[_Union[SearchMode, str]] = ..., query_variants: _Optional[_Iterable[str]] = ..., document_ids: _Optional[_Iterable[str]] = ..., mmr_diversity: _Optional[float] = ..., rerank: _Optional[bool] = ..., graph_expand: _Optional[bool] = ..., explain: _Optional[bool] = ..., neighbours: _Optional[int] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "parameters_json_schema")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters_json_schema: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters_json_schema: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class ChatTurn(_message.Message):
    __slots__ = ("role", "content", "tool_calls", "tool_call_id")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class GenerationOptions(_message.Message):
    __slots__ = ("model", "system_prompt", "stop", "top_p", "seed", "json_schema", "tools", "messages", "tool_choice")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_PROMPT_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    model: str
    system_prompt: str
    stop: _containers.RepeatedScalarFieldContainer[str]
    top_p: float
    seed: int
    json_schema: str
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    messages: _containers.RepeatedCompositeFieldContainer[ChatTurn]
    tool_choice: str
    def __init__(self, model: _Optional[str] = ..., system_prompt: _Optional[str] = ..., stop: _Optional[_Iterable[str]] = ..., top_p: _Optional[float] = ..., seed: _Optional[int] = ..., json_schema: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., messages: _Optional[_Iterable[_Union[ChatTurn, _Mapping]]] = ..., tool_choice: _Optional[str] = ...) -> None: ...

class WolfRequest(_message.Message):
    __slots__ = ("request_id", "model_type", "prompt", "context", "metadata", "tenant_id", "retrieval", "generation")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model_type: ModelType
    prompt: str
    context: RAGContext
    metadata: RequestMetadata
    tenant_id: str
    retrieval: RetrievalOptions
    generation: GenerationOptions
    def __init__(self, request_id: _Optional[str] = ..., model_type: _Optional[_Union[ModelType, str]] = ..., prompt: _Optional[str] = ..., context: _Optional[_Union[RAGContext, _Mapping]] = ..., metadata: _Optional[_Union[RequestMetadata, _Mapping]] = ..., tenant_id: _Optional[str] = ..., retrieval: _Optional[_Union[RetrievalOptions, _Mapping]] = ..., generation: _Optional[_Union[GenerationOptions, _Mapping]] = ...) -> None: ...

class WolfResponse(_message.Message):
    __slots__ = ("request_id", "model_type", "rag_context", "llm_response", "metadata")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_TYPE_FIELD_NUMBER: _ClassVar[int]
    RAG_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    LLM_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model_type: ModelType
    rag_context: RAGContext
    llm_response: LLMResponse
    metadata: ResponseMetadata
    def __init__(self, request_id: _Optional[str] = ..., model_type: _Optional[_Union[ModelType, str]] = ..., rag_context: _Optional[_Union[RAGContext, _Mapping]] = ..., llm_response: _Optional[_Union[LLMResponse, _Mapping]] = ..., metadata: _Optional[_Union[ResponseMetadata, _Mapping]] = ...) -> None: ...
