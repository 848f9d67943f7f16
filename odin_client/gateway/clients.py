"""One Odin client per API key, opened on first use and reused (channels stay warm).

Rules (why: docs/decisions/0243-gateway-client-pool.md):

* A key is checked before any client exists: its form first (printable ASCII, at most 512 characters,
  else 401), then, when the gateway has ``api_keys`` configured, against their SHA-256 (unknown key: 401).
* Clients are leased and reference-counted: a client in use is never closed under its call.
* The pool keeps at most ``size`` clients of *proven* keys (the gateway's ``api_keys`` hold them, or Freki or
  Geri answered a call made with them), closing the least recently used idle one beyond that. A key's first
  call runs on a client outside that count; if Freki or Geri refuse the key (UNAUTHENTICATED) the client is
  closed when the call ends. So keys nobody holds never crowd out the ones in use, and the clients of
  unproven keys are bounded by the calls in flight (the server's worker threads).
"""

from __future__ import annotations

import hmac
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import grpc
from pydantic import SecretStr

from odin_client.client import OdinClient
from odin_client.gateway.errors import GatewayError
from odin_client.settings import OdinSettings
from odin_client.types.errors import OdinError
from wolf_service.auth import ApiKey, hash_key

MAX_KEY_CHARS = 512
_KEY_FORM = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY_CHARS}}}")


def bearer_key(header: str, *, required: bool) -> str:
    """The API key of an ``Authorization`` header value ("" when there is none and none is ``required``).

    Raises:
        GatewayError: 401 when the header is not ``Bearer <key>`` or the key is not printable ASCII.
    """
    scheme, _, key = header.strip().partition(" ")
    key = key.strip()
    if header and scheme.lower() != "bearer":
        raise GatewayError(401, "Authorization must be 'Bearer <API key>'", "authentication_error",
                           code="invalid_authorization", param="Authorization")
    if header and not _KEY_FORM.fullmatch(key):
        raise GatewayError(401, f"the API key must be 1 to {MAX_KEY_CHARS} printable ASCII characters "
                                "(Authorization: Bearer <key>)", "authentication_error", code="invalid_api_key",
                           param="Authorization")
    if required and not key:
        raise GatewayError(401, "an API key is required: send 'Authorization: Bearer <key>'",
                           "authentication_error", code="missing_api_key", param="Authorization")
    return key


@dataclass(eq=False)
class _Lease:
    client: OdinClient
    proven: bool  # the key is known to be valid
    users: int = 0
    pooled: bool = True  # still in the pool; once out, the last user closes it


class ClientPool:
    """Odin clients by API key ("" = no key), leased with ``lease``."""

    def __init__(self, base: OdinSettings, size: int, keys: Callable[[], list[ApiKey]] = list) -> None:
        """``size``: clients kept open at most (beyond those in use); ``keys``: the keys the gateway accepts
        (an empty list: any key, checked by Freki and Geri)."""
        self._base = base
        self._size = size
        self._keys = keys
        self._clients: OrderedDict[str, _Lease] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def check(self, api_key: str) -> None:
        """Refuse (401) a key the gateway's ``api_keys`` do not hold; any key passes when none is configured."""
        keys = self._keys()
        if not keys:
            return
        digest = hash_key(api_key) if api_key else ""
        found = False
        for key in keys:  # every key compared, so timing does not tell how close a guess came
            found |= hmac.compare_digest(digest, key.sha256)
        if not found:
            raise GatewayError(401, "unknown API key" if api_key else
                               "an API key is required: send 'Authorization: Bearer <key>'", "authentication_error",
                               code="invalid_api_key" if api_key else "missing_api_key", param="Authorization")

    @contextmanager
    def lease(self, api_key: str, user: str = "") -> Iterator[OdinClient]:
        """The client that sends ``api_key`` to Freki and Geri, held open until the block ends; with ``user``
        (checked by the caller), a view of it that also sends ``x-wolf-user: <user>``.

        Raises:
            GatewayError: 401 for a key ``check`` refuses (no client is created), 503 once the pool is closed.
        """
        self.check(api_key)
        entry = self._acquire(api_key)
        refused = False
        try:
            yield entry.client.for_user(user) if user else entry.client
        except OdinError as exc:
            refused = exc.code == grpc.StatusCode.UNAUTHENTICATED
            raise
        finally:
            self._release(api_key, entry, refused)

    def _acquire(self, api_key: str) -> _Lease:
        with self._lock:
            if self._closed:
                raise GatewayError(503, "the gateway is shutting down", "service_unavailable",
                                   code="shutting_down")
            entry = self._clients.get(api_key)
            if entry is None:
                settings = self._base.model_copy(update={"api_key": SecretStr(api_key) if api_key else None})
                entry = self._clients[api_key] = _Lease(OdinClient(settings), proven=bool(self._keys()))
            self._clients.move_to_end(api_key)
            entry.users += 1
            evicted = self._trim()
        for old in evicted:
            old.client.close()
        return entry

    def _release(self, api_key: str, entry: _Lease, refused: bool) -> None:
        with self._lock:
            entry.users -= 1
            if refused and entry.pooled:
                entry.pooled = False
                del self._clients[api_key]
            entry.proven = entry.proven or not refused
            done = [entry] if not entry.pooled and not entry.users else []
            done += self._trim()
        for old in done:
            old.client.close()

    def _trim(self) -> list[_Lease]:
        """Take the least recently used idle clients of proven keys out while more than ``size`` are proven;
        the caller closes them (outside the lock)."""
        proven = [k for k, e in self._clients.items() if e.proven]
        idle = [k for k in proven if not self._clients[k].users]
        out = [self._clients.pop(k) for k in idle[:max(0, len(proven) - self._size)]]
        for entry in out:
            entry.pooled = False
        return out

    def stream(self, api_key: str, make: Callable[[OdinClient], Iterator[str]], user: str = "") -> Iterator[str]:
        """``make(client)``'s events with the client leased until the stream ends. The key is checked, the
        lease taken and ``make`` called now (it starts the upstream call), so a refusal is an HTTP error
        rather than a broken stream."""
        stack = ExitStack()
        client = stack.enter_context(self.lease(api_key, user))
        try:
            inner = make(client)
        except BaseException:
            stack.close()
            raise

        def events() -> Iterator[str]:
            with stack:
                yield from inner

        return events()

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def close(self) -> None:
        """Close every idle client; one in use closes when its call ends."""
        with self._lock:
            self._closed = True
            entries = list(self._clients.values())
            self._clients.clear()
            for entry in entries:
                entry.pooled = False
            idle = [entry for entry in entries if not entry.users]
        for entry in idle:
            entry.client.close()
