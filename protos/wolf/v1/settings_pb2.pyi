from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetSettingsRequest(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    def __init__(self, request_id: _Optional[str] = ...) -> None: ...

class SettingsView(_message.Message):
    __slots__ = ("service", "settings_json", "reloadable", "file_only", "settings_file")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_JSON_FIELD_NUMBER: _ClassVar[int]
    RELOADABLE_FIELD_NUMBER: _ClassVar[int]
    FILE_ONLY_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FILE_FIELD_NUMBER: _ClassVar[int]
    service: str
    settings_json: str
    reloadable: _containers.RepeatedScalarFieldContainer[str]
    file_only: _containers.RepeatedScalarFieldContainer[str]
    settings_file: str
    def __init__(self, service: _Optional[str] = ..., settings_json: _Optional[str] = ..., reloadable: _Optional[_Iterable[str]] = ..., file_only: _Optional[_Iterable[str]] = ..., settings_file: _Optional[str] = ...) -> None: ...

class UpdateSettingsRequest(_message.Message):
    __slots__ = ("request_id", "changes_json", "dry_run")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CHANGES_JSON_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    changes_json: str
    dry_run: bool
    def __init__(self, request_id: _Optional[str] = ..., changes_json: _Optional[str] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class UpdateSettingsResponse(_message.Message):
    __slots__ = ("request_id", "changed", "persisted", "settings", "warnings")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    PERSISTED_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    changed: _containers.RepeatedScalarFieldContainer[str]
    persisted: bool
    settings: SettingsView
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., changed: _Optional[_Iterable[str]] = ..., persisted: _Optional[bool] = ..., settings: _Optional[_Union[SettingsView, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...
