"""The end user an MCP request is made for, passed on to Freki and Geri as ``x-wolf-user``.

An MCP client names the user per request in either of two places:

- the request's ``_meta`` object, key ``x-wolf-user`` (``session.call_tool(..., meta={"x-wolf-user": "agent-7"})``;
  tool calls, resource reads and resource lists), which the protocol carries on every transport;
- over Streamable HTTP, the header ``X-Wolf-User`` on the HTTP request (what a proxy in front can set).

Both at once must agree. The id is checked with the services' own rule against ``user_id_max_chars``. Over stdio
the agent acts as the local user: the user is Odin's ``user_id`` setting, and a ``_meta`` naming another user
is refused. The user grants nothing: what a call may read is decided by the API key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from wolf_service.identity import UserIdError, checked_user_id

USER_KEY = "x-wolf-user"
_SETTING = "the MCP server's user_id_max_chars"
# The HTTP request's X-Wolf-User, set by UserHeader for the request's handling ("" without one).
_header_user: ContextVar[str] = ContextVar("wolf_mcp_header_user", default="")
# The user of the tool call or resource read being served, once resolved by request_user.
call_user: ContextVar[str] = ContextVar("wolf_mcp_call_user", default="")


def current_user() -> str:
    """The user Odin's calls are made for now ("" = Odin's configured ``user_id``)."""
    return call_user.get() or _header_user.get()


class UserHeader:
    """ASGI middleware: a valid ``X-Wolf-User`` header is the request's user; a malformed one is a 400
    (a JSON-RPC error naming the rule) before the MCP app sees the request."""

    def __init__(self, app: ASGIApp, max_chars: int) -> None:
        self.app, self.max_chars = app, max_chars

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == USER_KEY.encode()]
        try:
            if len(sent) > 1:
                raise UserIdError(f"X-Wolf-User was sent {len(sent)} times; send it once")
            user = checked_user_id(sent[0], self.max_chars, name="X-Wolf-User", setting=_SETTING) if sent else ""
        except UserIdError as exc:
            body = json.dumps({"jsonrpc": "2.0", "id": None,
                               "error": {"code": -32602, "message": str(exc)}}).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        token = _header_user.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            _header_user.reset(token)


def request_user(meta: Mapping[str, Any] | None, max_chars: int, *, stdio_user: str | None) -> str:
    """The user of the request being served ("" when it names none: Odin's configured ``user_id`` applies).

    Args:
        meta: The request's ``_meta`` (None when it has none).
        stdio_user: Over stdio, Odin's ``user_id`` setting ("" when unset); None over HTTP.

    Raises:
        UserIdError: ``_meta`` holds a malformed id, disagrees with the header, or names another user over stdio.
    """
    given = (meta or {}).get(USER_KEY)
    if given is not None and not isinstance(given, str):
        raise UserIdError(f"_meta {USER_KEY} must be a string (got {type(given).__name__})")
    from_meta = checked_user_id(given, max_chars, name=f"_meta {USER_KEY}", setting=_SETTING) if given else ""
    if stdio_user is not None:
        if from_meta and from_meta != stdio_user:
            raise UserIdError(f"over stdio the user is Odin's user_id setting ({stdio_user or 'unset'}); "
                              f"_meta {USER_KEY} may not name another")
        return ""
    header = _header_user.get()
    if header and from_meta and header != from_meta:
        raise UserIdError(f"_meta {USER_KEY} and the X-Wolf-User header name different users; send one")
    return from_meta or header
