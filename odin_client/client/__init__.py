"""The two clients: :class:`OdinClient` (blocking) and :class:`AsyncOdinClient` (asyncio), one surface.

``_async/`` is the source, written once; ``_sync/`` is generated from it by ``python -m scripts.unasync_client``
(``make check-clients`` fails when the committed copy is stale). Each runs the sans-IO calls of
:mod:`odin_client.protocol` over its own connection: :mod:`.blocking_connection` (grpc) or
:mod:`.async_connection` (grpc.aio).
"""

from odin_client.client._async.client import AsyncOdinClient
from odin_client.client._sync.client import OdinClient

__all__ = ["AsyncOdinClient", "OdinClient"]
