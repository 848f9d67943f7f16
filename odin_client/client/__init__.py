"""The two clients: :class:`OdinClient` (blocking, ``_sync``) and :class:`AsyncOdinClient` (asyncio, ``_async``)."""

from odin_client.client._async.client import AsyncOdinClient
from odin_client.client._sync.client import OdinClient

__all__ = ["AsyncOdinClient", "OdinClient"]
