"""One asyncio Odin client per caller: the client forwards the caller's API key to Freki and Geri and names
the key's tenant in every request. Clients are reused (channels stay warm); beyond ``size`` keys the least
recently used one is closed."""

from __future__ import annotations

from collections import OrderedDict

from pydantic import SecretStr

from odin_client.aio import AsyncOdinClient
from odin_client.mcp.access import Access
from odin_client.settings import OdinSettings


class AsyncClientPool:
    """Odin clients by (API key, tenant); the stdio caller uses Odin's configured key."""

    def __init__(self, base: OdinSettings, size: int) -> None:
        self._base = base
        self._size = size
        self._clients: OrderedDict[tuple[str | None, str], AsyncOdinClient] = OrderedDict()

    async def get(self, access: Access) -> AsyncOdinClient:
        """The client that acts for ``access`` (created on first use)."""
        slot = (access.api_key, access.tenant)
        client = self._clients.get(slot)
        if client is not None:
            self._clients.move_to_end(slot)
            return client
        update: dict[str, object] = {"tenant_id": access.tenant}
        if access.api_key is not None:
            update["api_key"] = SecretStr(access.api_key)
        client = self._clients[slot] = AsyncOdinClient(self._base.model_copy(update=update))
        while len(self._clients) > self._size:
            _, oldest = self._clients.popitem(last=False)
            await oldest.close()
        return client

    async def close(self) -> None:
        """Close every client."""
        clients, self._clients = list(self._clients.values()), OrderedDict()
        for client in clients:
            await client.close()
