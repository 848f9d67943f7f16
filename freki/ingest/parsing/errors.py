"""Errors raised when a document cannot be parsed; each carries the gRPC status a server should return."""

from __future__ import annotations

import grpc


def describe_source(source: str) -> str:
    """How a message names the document: its source, or a placeholder when none was given."""
    return repr(source) if source else "<unnamed document>"


class DocumentError(Exception):
    """A document the caller sent cannot be indexed. The message says what was wrong and where."""

    grpc_code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT

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
