from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModelType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RAG: _ClassVar[ModelType]
    LLM: _ClassVar[ModelType]
RAG: ModelType
LLM: ModelType

class WolfRequest(_message.Message):
    __slots__ = ("request_id", "model_type", "prompt", "rag_context", "metadata")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    RAG_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    model_type: ModelType
    prompt: str
    rag_context: RAGContext
    metadata: RequestMetadata
    def __init__(self, request_id: _Optional[str] = ..., model_type: _Optional[_Union[ModelType, str]] = ..., prompt: _Optional[str] = ..., rag_context: _Optional[_Union[RAGContext, _Mapping]] = ..., metadata: _Optional[_Union[RequestMetadata, _Mapping]] = ...) -> None: ...

class RequestMetadata(_message.Message):
    __slots__ = ("session_id", "max_tokens", "temperature", "language")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    max_tokens: int
    temperature: float
    language: str
    def __init__(self, session_id: _Optional[str] = ..., max_tokens: _Optional[int] = ..., temperature: _Optional[float] = ..., language: _Optional[str] = ...) -> None: ...

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

class RAGContext(_message.Message):
    __slots__ = ("documents", "retrieval_score")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[RetrievedDocument]
    retrieval_score: float
    def __init__(self, documents: _Optional[_Iterable[_Union[RetrievedDocument, _Mapping]]] = ..., retrieval_score: _Optional[float] = ...) -> None: ...

class RetrievedDocument(_message.Message):
    __slots__ = ("document_id", "content", "relevance_score", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_SCORE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    content: str
    relevance_score: float
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, document_id: _Optional[str] = ..., content: _Optional[str] = ..., relevance_score: _Optional[float] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LLMResponse(_message.Message):
    __slots__ = ("text", "tokens_used", "latency_ms", "cost", "model_used")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_USED_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    MODEL_USED_FIELD_NUMBER: _ClassVar[int]
    text: str
    tokens_used: int
    latency_ms: float
    cost: float
    model_used: str
    def __init__(self, text: _Optional[str] = ..., tokens_used: _Optional[int] = ..., latency_ms: _Optional[float] = ..., cost: _Optional[float] = ..., model_used: _Optional[str] = ...) -> None: ...

class ResponseMetadata(_message.Message):
    __slots__ = ("timestamp", "error")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    timestamp: int
    error: str
    def __init__(self, timestamp: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...
