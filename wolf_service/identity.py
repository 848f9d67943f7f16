"""Who is calling: the API key presented (its name, tenant and access groups) and the end user it acts for.

The user id travels as gRPC metadata ``x-wolf-user`` (grpcurl ``-H 'x-wolf-user: agent-7'``; any language's
gRPC client sets call metadata), separate from the ``authorization`` key: one key belongs to a front end or an
agency, the user id says which person behind it asked. It is recorded in the audit log and access log, binds
Geri sessions and reaches tool handlers. It grants nothing: what a call may read is decided by the key alone
(docs/decisions/0261-access-inside-a-tenant.md).

A user id is 1 to ``security.user_id_max_chars`` characters of ``A-Z a-z 0-9 _ . @ : + = -``; anything else
is refused with INVALID_ARGUMENT before the call runs, so a forged or oversize id never reaches a log line.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

USER_HEADER = "x-wolf-user"
AUTH_HEADER = "authorization"
# Patterns are applied with fullmatch: re's "$" also matches before a final newline.
_USER_CHARS = re.compile(r"[A-Za-z0-9_.@:+=\-]+")
# Access group names: the same alphabet as tenants, short enough to list many in a key.
GROUP_PATTERN = r"^[A-Za-z0-9_.\-@:]{1,64}$"
K = TypeVar("K")


class UserIdError(ValueError):
    """The ``x-wolf-user`` metadata is malformed; the message names the rule and the setting."""


def hash_key(key: str) -> str:
    """The hex SHA-256 stored in settings for ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def bearer_token(context: grpc.ServicerContext) -> str | None:
    """The token of an ``authorization: Bearer <token>`` header; "" when the header has another form."""
    for key, value in context.invocation_metadata() or ():
        if key == AUTH_HEADER:
            scheme, _, token = str(value).strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return None


def match_key(token: str | None, keys: Iterable[K]) -> K | None:
    """The configured key (anything with a ``sha256`` attribute) whose hash is ``token``'s, else None."""
    if not token:
        return None
    digest = hash_key(token)
    found = None
    for key in keys:
        # Compare against every key (no early exit) so timing does not reveal which prefix matched.
        if hmac.compare_digest(digest, str(getattr(key, "sha256", ""))):
            found = key
    return found


def user_id_of(context: grpc.ServicerContext, max_chars: int) -> str:
    """The caller's ``x-wolf-user`` ("" when absent).

    Raises:
        UserIdError: the id is empty, longer than ``max_chars`` or has a character outside the allowed set.
    """
    values = [str(v) for k, v in (context.invocation_metadata() or ()) if k == USER_HEADER]
    if not values:
        return ""
    if len(values) > 1:
        raise UserIdError(f"{USER_HEADER} was sent {len(values)} times; send it once")
    return checked_user_id(values[0], max_chars)


def logged_user(context: grpc.ServicerContext, max_chars: int) -> str:
    """The call's ``x-wolf-user`` for a log line ("" without one); a malformed one (the call is refused) is
    ``<invalid>``, never copied into the log."""
    try:
        return user_id_of(context, max_chars)
    except UserIdError:
        return "<invalid>"


def checked_user_id(user: str, max_chars: int, *, name: str = USER_HEADER,
                    setting: str = "security.user_id_max_chars") -> str:
    """``user`` when it is a valid user id (the one rule of every service, the gateway and MCP).

    Args:
        name: What carried it, for the error (a header, a body field).
        setting: The setting that holds ``max_chars``, for the error.

    Raises:
        UserIdError: ``user`` is empty, longer than ``max_chars`` or has a character outside the allowed set.
    """
    if not user:
        raise UserIdError(f"{name} is empty; leave it out or send a user id")
    if len(user) > max_chars:
        raise UserIdError(f"{name} is {len(user)} characters, over {setting}={max_chars}")
    if not _USER_CHARS.fullmatch(user):
        raise UserIdError(f"{name} may only hold letters, digits and _ . @ : + = - (got {user[:40]!r})")
    return user


@dataclass(frozen=True)
class Access:
    """What the calling key may read inside its tenant.

    ``groups`` None: every document (no key, or a key without ``access_groups``); otherwise documents without
    groups plus those sharing at least one group with it.
    """

    groups: frozenset[str] | None = None
    key_name: str = ""
    # May see figures that span every tenant (migration counts, disk bytes): keys are off, or the key holds admin.
    operator: bool = False

    @property
    def restricted(self) -> bool:
        """Whether the key sees only part of its tenant."""
        return self.groups is not None

    def may_read(self, document_groups: Iterable[str]) -> bool:
        """Whether a document with these groups is visible to the key."""
        wanted = set(document_groups)
        return self.groups is None or not wanted or bool(wanted & self.groups)

    def lacks(self, document_groups: Iterable[str]) -> list[str]:
        """The groups of ``document_groups`` the key does not hold (sorted; empty: it holds them all)."""
        if self.groups is None:
            return []
        return sorted(set(document_groups) - self.groups)


UNRESTRICTED = Access(operator=True)


def access_of(context: grpc.ServicerContext, keys: Iterable[Any]) -> Access:
    """The :class:`Access` of the key the call presented (unrestricted when keys are off or it has no groups).

    The auth interceptor has already refused calls without a valid key when keys are configured.
    """
    key = match_key(bearer_token(context), keys)
    if key is None:
        return UNRESTRICTED
    groups = getattr(key, "access_groups", None)
    holds = getattr(key, "holds", None)
    return Access(None if groups is None else frozenset(groups), str(getattr(key, "name", "")),
                  operator=bool(holds is not None and holds("admin")))
