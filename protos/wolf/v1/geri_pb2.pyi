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
    __slots__ = ("name", "backend", "size_bytes", "context_length", "family")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    name: str
    backend: str
    size_bytes: int
    context_length: int
    family: str
    def __init__(self, name: _Optional[str] = ..., backend: _Optional[str] = ..., size_bytes: _Optional[int] = ..., context_length: _Optional[int] = ..., family: _Optional[str] = ...) -> None: ...

class ListModelsResponse(_message.Message):
    __slots__ = ("models", "default_model")
    MODELS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODEL_FIELD_NUMBER: _ClassVar[int]
    models: _containers.RepeatedCompositeFieldContainer[ModelInfo]
    default_model: str
    def __init__(self, models: _Optional[_Iterable[_Union[ModelInfo, _Mapping]]] = ..., default_model: _Optional[str] = ...) -> None: ...
