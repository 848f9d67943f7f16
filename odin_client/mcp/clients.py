"""One asyncio Odin client per caller: the client forwards the caller's API key to Freki and Geri and names
the key's tenant in every request. Clients are reused (channels stay warm); beyond ``size`` keys the least
recently used one is retired — closed only after the longest call it may still be serving has had its
deadline, so evicting a client never breaks a call in flight."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from pydantic import SecretStr

from odin_client.client import AsyncOdinClient
from odin_client.mcp.access import Access
from odin_client.settings import OdinSettings


class AsyncClientPool:
    """Odin clients by (API key, tenant); the stdio caller uses Odin's configured key."""

    def __init__(self, base: OdinSettings, size: int) -> None:
        self._base = base
        self._size = size
        self._clients: OrderedDict[tuple[str | None, str], AsyncOdinClient] = OrderedDict()
        self._retired: set[AsyncOdinClient] = set()
        self._grace_s = max(base.deadline_s, base.generate_deadline_s, base.index_deadline_s)

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
            self._retire(oldest)
        return client

    def _retire(self, client: AsyncOdinClient) -> None:
        self._retired.add(client)

        def close() -> None:
            if client in self._retired:
                self._retired.discard(client)
                asyncio.ensure_future(client.close())

        asyncio.get_running_loop().call_later(self._grace_s, close)

    @property
    def open_clients(self) -> int:
        """Clients in use or retired but not yet closed."""
        return len(self._clients) + len(self._retired)

    async def close(self) -> None:
        """Close every client, retired ones too."""
        clients = [*self._clients.values(), *self._retired]
        self._clients, self._retired = OrderedDict(), set()
        for client in clients:
            await client.close()
