"""Odin: the typed Python client (and ``odin`` CLI) for Wolfpack RAG's Freki and Geri services.

Start with :class:`OdinClient` (blocking) or :class:`AsyncOdinClient` (asyncio); configure it
with :class:`OdinSettings` (``ODIN_*`` environment variables or a JSON file).
"""

from odin_client.client import AsyncOdinClient, OdinClient
from odin_client.protocol.retry import RetryPolicy
from odin_client.settings import OdinSettings
from odin_client.types.errors import (
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
from odin_client.types.filters import Filter
from odin_client.types.results import Answer, Generation, Retrieval, Source, Timings
from odin_client.types.status import IndexStatusInfo, ModelList
from odin_client.types.writes import IndexResult

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
