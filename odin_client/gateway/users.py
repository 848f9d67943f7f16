"""The end user a gateway request is made for, passed on to Freki and Geri as ``x-wolf-user``.

A caller names the user in OpenAI's body field ``user`` (chat completions, embeddings) or the header
``X-Wolf-User`` (every route); both at once must agree. The id is checked with the services' own rule
(:func:`wolf_service.identity.checked_user_id`) against ``user_id_max_chars``, so a bad id is a 400 here
rather than a refused call upstream. It reaches audit logs, binds Geri sessions and grants nothing: what
a call may read is decided by its API key (docs/operations.md, User ids).
"""

from __future__ import annotations

from fastapi import Request

from odin_client.gateway.errors import GatewayError
from wolf_service.identity import UserIdError, checked_user_id

USER_HEADER = "x-wolf-user"
_SETTING = "the gateway's user_id_max_chars"


def _checked(user: str, max_chars: int, name: str, param: str) -> str:
    try:
        return checked_user_id(user, max_chars, name=name, setting=_SETTING)
    except UserIdError as exc:
        raise GatewayError(400, str(exc), code="invalid_user", param=param) from None


def request_user(request: Request, body_user: str | None, max_chars: int) -> str:
    """The request's user id ("" when it names none).

    Args:
        body_user: The body's ``user`` field (None on a route without one); "" counts as absent, as OpenAI
            clients send it.

    Raises:
        GatewayError: 400 ``invalid_user`` when the id breaks the rule, the header is sent twice, or the
            header and the body name different users.
    """
    sent = request.headers.getlist(USER_HEADER)
    if len(sent) > 1:
        raise GatewayError(400, f"X-Wolf-User was sent {len(sent)} times; send it once", code="invalid_user",
                           param="X-Wolf-User")
    header = _checked(sent[0], max_chars, "X-Wolf-User", "X-Wolf-User") if sent else ""
    body = _checked(body_user, max_chars, "user", "user") if body_user else ""
    if header and body and header != body:
        raise GatewayError(400, "the body's user and the X-Wolf-User header name different users; send one",
                           code="invalid_user", param="user")
    return header or body
