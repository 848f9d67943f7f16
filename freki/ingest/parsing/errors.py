"""Errors raised when a document cannot be parsed; each carries the gRPC status a server should return.

This package runs inside the parser sandbox's worker process (``freki.ingest.sandbox``), which must start
fast and import nothing heavy: the status code is therefore looked up in ``grpc`` only when a server asks
for it (``exc.grpc_code``), never at import.
"""

from __future__ import annotations

from typing import Any


def describe_source(source: str) -> str:
    """How a message names the document: its source (shortened), or a placeholder when none was given."""
    if not source:
        return "<unnamed document>"
    return repr(source if len(source) <= 120 else source[:100] + "…" + source[-19:])


class _Status:
    """A class attribute resolving to ``grpc.StatusCode[name]`` on first access (keeps grpc out of imports)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        import grpc

        return grpc.StatusCode[self.name]


class DocumentError(Exception):
    """A document the caller sent cannot be indexed. The message says what was wrong and where."""

    grpc_code: Any = _Status("INVALID_ARGUMENT")

    def __init__(self, message: str, *, source: str = "") -> None:
        super().__init__(message)
        self.source = source


class UnsupportedFormat(DocumentError):
    """The content type is not one Freki can parse (or cannot be recognised)."""


class CorruptDocument(DocumentError):
    """The content claims a format but cannot be read as it (truncated, malformed, wrong encoding)."""


class EncryptedDocument(DocumentError):
    """The document is password protected; it must be decrypted before indexing."""


class EmptyDocument(DocumentError):
    """The document parsed but holds no text (e.g. a scanned PDF without a text layer)."""


class RefusedStructure(DocumentError):
    """The document uses a construct Freki refuses on principle (YAML aliases, nesting past a limit)."""


class LimitExceeded(DocumentError):
    """The document is over a size, count or time limit; the message names the setting (RESOURCE_EXHAUSTED)."""

    grpc_code: Any = _Status("RESOURCE_EXHAUSTED")

    def __init__(self, message: str, *, setting: str = "", source: str = "") -> None:
        super().__init__(message, source=source)
        self.setting = setting


class DocumentTooLarge(DocumentError):
    """The document exceeds the size limit the caller configured."""

    def __init__(self, size: int, limit: int, *, source: str = "") -> None:
        super().__init__(
            f"document {describe_source(source)} is {size} bytes, over the {limit}-byte limit; "
            "split it or raise the limit",
            source=source,
        )
        self.size = size
        self.limit = limit


# How the sandbox's worker names an error on the wire, and back (only these classes cross the process boundary).
WIRE_ERRORS: dict[str, type[DocumentError]] = {
    cls.__name__: cls
    for cls in (DocumentError, UnsupportedFormat, CorruptDocument, EncryptedDocument, EmptyDocument,
                RefusedStructure, LimitExceeded)
}
