import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from wolf.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

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
    __slots__ = ("session_id", "tenant_id", "owner_id", "turns", "updated_at", "expires_at")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_ID_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    tenant_id: str
    owner_id: str
    turns: _containers.RepeatedCompositeFieldContainer[_common_pb2.ChatTurn]
    updated_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, session_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., owner_id: _Optional[str] = ..., turns: _Optional[_Iterable[_Union[_common_pb2.ChatTurn, _Mapping]]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

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
