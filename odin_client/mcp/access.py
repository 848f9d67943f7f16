"""Who is calling a tool: the API key's name, its tenant and its scopes.

Over Streamable HTTP every request carries ``Authorization: Bearer <key>``; :class:`ApiKeyVerifier` checks it
against the configured keys (the same entries, hashed, as Freki's and Geri's ``security.api_keys``) for the
SDK's bearer middleware, which refuses a request without a valid key with 401 before any tool runs. The key
is then forwarded to Freki and Geri, which check it again. Over stdio there is no bearer key: the agent acts
as the local user, with Odin's configured key and tenant, and with the scopes ``stdio_scopes`` allows.

The tenant always comes from here, never from a tool's arguments.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from wolf_service.auth import ApiKey, hash_key

SCOPES = ("read", "write", "delete", "admin")
TENANT_CLAIM = "wolf_tenant"


@dataclass(frozen=True)
class Access:
    """What the caller of one tool call may do, and as whom Odin calls Freki and Geri for it."""

    name: str
    tenant: str
    scopes: frozenset[str]
    api_key: str | None = None  # forwarded to Freki and Geri; None = Odin's configured key

    def holds(self, scope: str) -> bool:
        """Whether the caller may act with ``scope`` (``admin`` holds them all)."""
        return scope in self.scopes or "admin" in self.scopes

    @property
    def tenant_name(self) -> str:
        """The tenant as Freki names it (an empty tenant is ``default``)."""
        return self.tenant or "default"


def held_scopes(key: ApiKey) -> list[str]:
    """Every scope a key holds, spelled out (a key without a ``scopes`` list holds all of them)."""
    return [s for s in SCOPES if key.holds(s)]


class ApiKeyVerifier:
    """The MCP SDK's ``TokenVerifier`` over our API keys: a bearer token is valid when its SHA-256 is a
    configured key's; the access token carries the key's name, scopes and tenant."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._keys = list(keys)

    def match(self, token: str) -> ApiKey | None:
        """The configured key ``token`` is, or None."""
        digest = hash_key(token)
        found = None
        for key in self._keys:
            # Compare against every key (no early exit) so timing does not reveal which one matched.
            if hmac.compare_digest(digest, key.sha256):
                found = key
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access a valid key grants; None makes the SDK answer 401."""
        key = self.match(token.strip())
        if key is None:
            return None
        return AccessToken(token=token.strip(), client_id=key.name, scopes=held_scopes(key),
                           claims={TENANT_CLAIM: key.tenant})


def stdio_access(keys: Iterable[ApiKey], api_key: str | None, tenant: str, allowed: Iterable[str]) -> Access:
    """The fixed access of the stdio transport: the scopes ``allowed`` (``stdio_scopes``), narrowed to the
    configured key's own when the key table names it (then its tenant is used too)."""
    scopes = frozenset(allowed)
    name = "stdio"
    key = ApiKeyVerifier(keys).match(api_key) if api_key else None
    if key is not None:
        scopes = frozenset(s for s in scopes if key.holds(s))
        name, tenant = key.name, key.tenant
    return Access(name=name, tenant=tenant, scopes=scopes)


def request_access(default: Access | None) -> Access | None:
    """The access of the request being served: the bearer key's over HTTP, else ``default`` (stdio)."""
    token = get_access_token()
    if token is None:
        return default
    tenant = str((token.claims or {}).get(TENANT_CLAIM, ""))
    return Access(name=token.client_id, tenant=tenant, scopes=frozenset(token.scopes), api_key=token.token)
