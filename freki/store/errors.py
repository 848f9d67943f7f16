"""Domain errors of the vector store layer.

Each error carries the gRPC status code the Freki service should answer with, so the service maps store
failures in exactly one place (its error interceptor) instead of guessing from exception types.
"""

from __future__ import annotations

import grpc


class StoreError(Exception):
    """Base class of every error the vector store raises on purpose."""

    grpc_code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidStoreInput(StoreError, ValueError):
    """A point, vector, filter or argument was malformed; nothing was written."""

    grpc_code = grpc.StatusCode.INVALID_ARGUMENT


class EmbeddingModelMismatch(StoreError):
    """The collection was built with another embedding model or vector size than the one requested."""

    grpc_code = grpc.StatusCode.FAILED_PRECONDITION


class CollectionNotReady(StoreError):
    """The store is closed, or no collection was opened with ``ensure_collection`` yet."""

    grpc_code = grpc.StatusCode.FAILED_PRECONDITION


class PointNotFound(StoreError):
    """A write referred to point ids that do not exist; nothing was written."""

    grpc_code = grpc.StatusCode.NOT_FOUND


class StoreUnavailable(StoreError):
    """The engine cannot be reached: Qdrant server down, or the data dir is locked by another process."""

    grpc_code = grpc.StatusCode.UNAVAILABLE


class KeyStoreMismatch(StoreError):
    """Sealed data refers to keys the configured key store never held (a wrong or lost ``gdpr.keys_path``)."""


class DiskFull(StoreError):
    """The data dir's file system is below its refuse level (``freki.store.disk``); nothing was written."""

    grpc_code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class CorruptData(StoreError):
    """Stored data failed its integrity check (``freki.store.integrity``) or the engine could not decode it."""
