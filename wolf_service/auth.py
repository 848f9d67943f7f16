"""Per-tenant API keys, checked by a server interceptor.

Clients send ``authorization: Bearer <key>`` metadata. Settings hold only the key's
SHA-256 (hex), never the key, so a leaked settings file or ``ps`` listing does not leak
credentials; ``python -m wolf_service.auth`` hashes a key read from stdin. Each key
belongs to exactly one tenant, and the interceptor enforces it on every request that
has a ``tenant_id`` field, or wraps a WolfRequest that has one (GeriService.Answer): empty → filled
with the key's tenant; another tenant → PERMISSION_DENIED. Health checks and reflection stay open so
probes and grpcurl work. Auth is on as soon as at least one key is configured, off otherwise (local demo).

Scopes: a key may list the scopes it holds (``read``, ``write``, ``delete``, ``admin``); each service
says which scope each of its RPCs needs (an RPC it does not list needs ``admin``: fail closed). ``admin``
includes every other scope. A key without a ``scopes`` list holds every scope, so key files written
without scopes keep working.

Inside its tenant a key may be limited to ``access_groups`` (applied by each service's read paths:
``wolf_service.identity.access_of``). Every call's ``x-wolf-user`` is validated here, keys on or off.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, Literal

import grpc
from pydantic import BaseModel, Field, field_validator

from wolf_service import status_details
from wolf_service.identity import GROUP_PATTERN, UserIdError, bearer_token, hash_key, match_key, user_id_of
from wolf_service.tls import TlsSettings
from wolf_service.wrapping import (
    StreamCall,
    UnaryCall,
    WrappingInterceptor,
    envelope_of,
    is_infrastructure,
    rpc_name,
)

__all__ = ["ApiKey", "ApiKeyInterceptor", "SecuritySettings", "bearer_token", "hash_key"]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
Scope = Literal["read", "write", "delete", "admin"]


class ApiKey(BaseModel):
    """One API key: who it is (for logs and audit), its tenant, and the SHA-256 of the key."""

    name: str = Field(..., min_length=1, max_length=128, description="Shown in logs and audit, e.g. 'acme-ci'.")
    tenant: str = Field(..., pattern=r"^[A-Za-z0-9_.\-@]{1,128}$")
    sha256: str = Field(..., description="hex SHA-256 of the key: `python -m wolf_service.auth < keyfile`.")
    scopes: list[Scope] | None = Field(
        default=None,
        description="What the key may do; None (unset) = every scope, so key files without scopes keep working.",
    )
    access_groups: list[Annotated[str, Field(pattern=GROUP_PATTERN)]] | None = Field(
        default=None, max_length=256,
        description="Documents the key may read inside its tenant: those without groups and those sharing one "
                    "of these; None (unset) = every document of the tenant (docs/decisions/0261).",
    )

    def holds(self, scope: str) -> bool:
        """Whether the key may act with ``scope`` (``admin`` holds them all)."""
        return self.scopes is None or scope in self.scopes or "admin" in self.scopes

    @field_validator("sha256")
    @classmethod
    def _is_hash(cls, value: str) -> str:
        value = value.strip().lower()
        if not _HEX64.match(value):
            raise ValueError(
                "sha256 must be the 64-hex-digit SHA-256 of the key, not the key itself "
                "(hash it with: python -m wolf_service.auth < keyfile)"
            )
        return value


class SecuritySettings(BaseModel):
    """API keys and TLS. Both off by default (plaintext, no keys) for the local demo."""

    api_keys: list[ApiKey] = Field(default_factory=list, description="Empty = no authentication.")
    user_id_max_chars: int = Field(
        default=128, ge=1, le=1024, description="Longest x-wolf-user id accepted (INVALID_ARGUMENT above it)."
    )
    tls: TlsSettings = TlsSettings()
    # The settings API's body limits: a change is a handful of settings, a bigger or deeper body is a mistake
    # or an attack. Under ``security``, so only the file can raise them, never the API itself.
    settings_change_max_bytes: int = Field(
        default=64 * 1024, ge=1024, le=4 * 1024 * 1024,
        description="Largest UpdateSettings changes_json accepted, in bytes (INVALID_ARGUMENT above it).")
    settings_change_max_depth: int = Field(
        default=16, ge=8, le=64,
        description="Deepest nesting of an UpdateSettings changes_json (INVALID_ARGUMENT above it).")

    @field_validator("api_keys")
    @classmethod
    def _unique(cls, keys: list[ApiKey]) -> list[ApiKey]:
        seen: dict[str, str] = {}
        for key in keys:
            if key.sha256 in seen:
                raise ValueError(f"api_keys {seen[key.sha256]!r} and {key.name!r} have the same key")
            seen[key.sha256] = key.name
        return keys


class ApiKeyInterceptor(WrappingInterceptor):
    """Authenticates calls by API key and pins each request to its key's tenant.

    Args:
        keys: Returns the configured keys; read on every call so a settings reload
            (key rotation) takes effect without a restart.
        scopes: The scope each RPC needs (``"FrekiService/DeleteDocument": "delete"``); an RPC not
            listed needs ``admin``.
    """

    def __init__(self, keys: Callable[[], list[ApiKey]], scopes: Mapping[str, str] | None = None,
                 user_id_max_chars: Callable[[], int] = lambda: 128) -> None:
        self._keys = keys
        self._scopes = dict(scopes or {})
        self._user_max = user_id_max_chars

    def applies_to(self, method: str) -> bool:
        return not is_infrastructure(method)

    def identify(self, context: grpc.ServicerContext) -> str | None:
        """Name of the key the call presented, if it is a configured key."""
        key = self._match(bearer_token(context))
        return key.name if key else None

    def _match(self, token: str | None) -> ApiKey | None:
        return match_key(token, self._keys())

    def _authorize(self, method: str, request: Any, context: grpc.ServicerContext) -> None:
        try:  # checked with keys on or off: the id reaches logs, the audit and sessions either way
            user_id_of(context, self._user_max())
        except UserIdError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        keys = self._keys()
        if not keys:
            return
        token = bearer_token(context)
        if token is None:
            status_details.abort(
                context, grpc.StatusCode.UNAUTHENTICATED,
                "missing API key: send metadata 'authorization: Bearer <key>'", method=method, reason="MISSING_API_KEY",
            )
        if token == "":
            status_details.abort(
                context, grpc.StatusCode.UNAUTHENTICATED,
                "malformed authorization metadata: expected 'Bearer <key>'", method=method,
                reason="MALFORMED_AUTHORIZATION",
            )
        key = self._match(token)
        if key is None:
            status_details.abort(context, grpc.StatusCode.UNAUTHENTICATED,
                                 "invalid API key: it matches no configured key", method=method,
                                 reason="INVALID_API_KEY")
        assert key is not None  # abort() raised otherwise
        needed = self._scopes.get(rpc_name(method), "admin")
        if not key.holds(needed):
            status_details.abort(
                context, grpc.StatusCode.PERMISSION_DENIED,
                f"API key {key.name!r} lacks scope {needed!r}, which {rpc_name(method)} needs "
                f"(it holds: {', '.join(key.scopes or []) or 'none'})", method=method, reason="MISSING_SCOPE",
            )
        self._pin_tenant(key, request, context, method)

    def _pin_tenant(self, key: ApiKey, request: Any, context: grpc.ServicerContext, method: str = "") -> None:
        request = envelope_of(request)  # an AnswerRequest's tenant is in its nested WolfRequest
        if not hasattr(request, "tenant_id"):
            return  # e.g. ListModels (no tenant-scoped data), or a stream of requests (pinned one by one)
        asked = str(request.tenant_id or "")
        if not asked:
            request.tenant_id = key.tenant
        elif asked != key.tenant:
            status_details.abort(
                context, grpc.StatusCode.PERMISSION_DENIED,
                f"API key {key.name!r} is for tenant {key.tenant!r}; it cannot act on tenant {asked!r} "
                "(leave tenant_id empty or set it to the key's tenant)", method=method, reason="OTHER_TENANT",
            )

    def unary(self, method: str, request: Any, context: grpc.ServicerContext, call: UnaryCall) -> Any:
        self._authorize(method, request, context)
        return call(request, context)

    def stream(
        self, method: str, request: Any, context: grpc.ServicerContext, call: StreamCall
    ) -> Iterator[Any]:
        self._authorize(method, request, context)
        yield from call(request, context)

    def each_message(self, method: str, message: Any, context: grpc.ServicerContext) -> Any:
        key = self._match(bearer_token(context)) if self._keys() else None
        if key is not None:  # the call was authorised in ``stream``; pin this message like a unary request
            self._pin_tenant(key, message, context, method)
        return message


def main() -> int:
    """Print the SHA-256 to put in settings for the key read from stdin (one line)."""
    key = sys.stdin.readline().strip()
    if not key:
        print("usage: python -m wolf_service.auth < keyfile   (reads the key from stdin)", file=sys.stderr)
        return 2
    print(hash_key(key))
    return 0


if __name__ == "__main__":
    sys.exit(main())
