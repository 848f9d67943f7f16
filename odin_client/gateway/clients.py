"""One Odin client per API key, opened on first use and reused (channels stay warm); least recently
used ones are closed when more than ``clients_cached`` keys are in use."""

from __future__ import annotations

import threading
from collections import OrderedDict

from pydantic import SecretStr

from odin_client.client import OdinClient
from odin_client.settings import OdinSettings


class ClientPool:
    """Odin clients by API key ("" = no key)."""

    def __init__(self, base: OdinSettings, size: int) -> None:
        self._base = base
        self._size = size
        self._clients: OrderedDict[str, OdinClient] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, api_key: str) -> OdinClient:
        """The client that sends ``api_key`` to Freki and Geri."""
        with self._lock:
            client = self._clients.get(api_key)
            if client is not None:
                self._clients.move_to_end(api_key)
                return client
            settings = self._base.model_copy(update={"api_key": SecretStr(api_key) if api_key else None})
            client = self._clients[api_key] = OdinClient(settings)
            while len(self._clients) > self._size:
                _, oldest = self._clients.popitem(last=False)
                oldest.close()
            return client

    def close(self) -> None:
        """Close every client."""
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
