"""Odin: the typed Python client (and ``odin`` CLI) for Wolfpack RAG's Freki and Geri services.

Start with :class:`OdinClient` (blocking) or :class:`odin_client.aio.AsyncOdinClient`; configure it
with :class:`OdinSettings` (``ODIN_*`` environment variables or a JSON file).
"""

from odin_client.aio import AsyncOdinClient
from odin_client.client import OdinClient
from odin_client.errors import (
    ClientClosed,
    DeadlineExceeded,
    InvalidRequest,
    NotFound,
    OdinError,
    PermissionDenied,
    RateLimited,
    ServiceUnavailable,
    StreamInterrupted,
)
from odin_client.filters import Filter
from odin_client.results import Answer, Generation, IndexResult, Retrieval, Source, Timings
from odin_client.retry import RetryPolicy
from odin_client.settings import OdinSettings
from odin_client.status import IndexStatusInfo, ModelList

__all__ = [
    "Answer",
    "AsyncOdinClient",
    "ClientClosed",
    "DeadlineExceeded",
    "Filter",
    "Generation",
    "IndexResult",
    "IndexStatusInfo",
    "InvalidRequest",
    "ModelList",
    "NotFound",
    "OdinClient",
    "OdinError",
    "OdinSettings",
    "PermissionDenied",
    "RateLimited",
    "Retrieval",
    "RetryPolicy",
    "ServiceUnavailable",
    "Source",
    "StreamInterrupted",
    "Timings",
]
