"""Access groups inside a tenant at Freki's API (docs/decisions/0261-access-inside-a-tenant.md).

The calling API key's ``access_groups`` (``security.api_keys``) decide what it reads: every read path passes
them to the engine, which adds ``freki.store.access.visible_to`` to its store query. Writes are checked here:
a key may only name groups it holds, and may only replace a document all of whose groups it holds, so no key
can widen its own reach or take a document out of another group. A refused write changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import grpc
from wolf.v1 import freki_pb2

from freki.engine import FrekiEngine
from freki.ingest.indexing import WriteGuard
from freki.ingest.registry import DocumentRecord
from freki.settings import FrekiSettings
from wolf_service.errors import InvalidArgument, NotFound, PermissionDenied
from wolf_service.identity import GROUP_PATTERN, Access, access_of

_GROUP = re.compile(GROUP_PATTERN)


def caller_access(context: grpc.ServicerContext, settings: FrekiSettings) -> Access:
    """The access of the key this call presented (unrestricted with keys off or a key without groups)."""
    return access_of(context, settings.security.api_keys)


def requested_groups(request: freki_pb2.IndexDocumentRequest, settings: FrekiSettings) -> tuple[str, ...]:
    """The request's ``access_groups``, validated (count, name shape), sorted and without repeats."""
    groups = list(request.access_groups)
    limit = settings.limits.max_access_groups
    if len(groups) > limit:
        raise InvalidArgument(f"access_groups names {len(groups)} groups; at most limits.max_access_groups={limit}")
    for group in groups:
        if not _GROUP.fullmatch(group):
            raise InvalidArgument(
                f"access_groups entry {group[:40]!r} must be 1-64 characters of letters, digits and _ . - @ :")
    return tuple(sorted(set(groups)))


def check_write(engine: FrekiEngine, access: Access, tenant: str, document_id: str,
                groups: tuple[str, ...]) -> WriteGuard | None:
    """PERMISSION_DENIED unless ``access`` may write ``document_id`` with ``groups``; returns the guard the
    engine must call under the document's lock (None for an unrestricted key).

    A restricted key must hold every group it names, and every group of the version it would replace. The
    second refusal tells the key that a document with this id exists (it cannot read it): ids are chosen by
    writers, so a writer can always learn that an id is taken (docs/decisions/0261). It is checked here, for
    an early refusal, and again by the guard under the document's lock, against the version the write would
    really replace: another write may change the document's groups in between (docs/decisions/0330).
    """
    if not access.restricted:
        return None
    missing = access.lacks(groups)
    if missing:
        raise PermissionDenied(
            f"API key {access.key_name!r} cannot write a document into access groups it does not hold: "
            f"{', '.join(missing)} (security.api_keys[].access_groups)")
    guard = replace_guard(access, document_id)
    guard(engine.registry.get(tenant, document_id))
    return guard


def replace_guard(access: Access, document_id: str) -> WriteGuard:
    """PERMISSION_DENIED, when called with a committed version, unless ``access`` holds all of its groups."""
    def guard(existing: DocumentRecord | None) -> None:
        if existing is not None and access.lacks(existing.access_groups):
            raise PermissionDenied(
                f"API key {access.key_name!r} cannot replace or delete document {document_id[:200]!r}: it belongs "
                "to access groups the key does not hold")
    return guard


def check_delete(engine: FrekiEngine, access: Access, tenant: str, document_id: str) -> WriteGuard | None:
    """NOT_FOUND (as for a missing document) when the document is hidden from ``access``; PERMISSION_DENIED
    when the key sees it but lacks one of its groups. Returns the guard to check both again under the
    document's lock (None for an unrestricted key)."""
    if not access.restricted:
        return None
    engine.get_document(tenant, document_id, access.groups)
    replaces = replace_guard(access, document_id)

    def guard(existing: DocumentRecord | None) -> None:
        if existing is not None and not existing.readable_by(access.groups):
            raise NotFound(f"document {document_id!r} is not indexed for tenant {tenant!r}")
        replaces(existing)

    guard(engine.registry.get(tenant, document_id))
    return guard


def check_reindex(engine: FrekiEngine, access: Access, tenant: str, document_id: str) -> None:
    """A restricted key may re-index a document it can read (NOT_FOUND otherwise, as for a missing one), not a
    whole tenant: the counts in the reply would include the documents hidden from it."""
    if not access.restricted:
        return
    if not document_id:
        raise PermissionDenied(f"API key {access.key_name!r} has access_groups; re-indexing a whole tenant needs a "
                               "key without them (name a document_id to re-index one you may read)")
    engine.get_document(tenant, document_id, access.groups)


def check_whole_store(access: Access, what: str) -> None:
    """PERMISSION_DENIED for a restricted key: an operation over the whole store (``what`` says why) reaches
    hidden documents and its reply counts them."""
    if access.restricted:
        raise PermissionDenied(f"API key {access.key_name!r} has access_groups; {what} (hidden ones included) "
                               "and reports their count, so it needs a key without them")


def visible_searches(engine: FrekiEngine, tenant: str, groups: frozenset[str] | None,
                     entries: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The search-log ``entries`` a key holding ``groups`` may export: those whose every hit it may read. A
    search that found a hidden document is left out whole, since its query may describe that document."""
    if groups is None:
        yield from entries
        return
    caller, seen = Access(groups), dict[str, bool]()
    for entry in entries:
        hits = entry.get("hits")
        ids = {str(h.get("document_id", "")) for h in hits if isinstance(h, dict)} if isinstance(hits, list) else set()
        for doc_id in ids - seen.keys():
            record = engine.registry.get(tenant, doc_id)
            # A document gone since the search is judged as hidden: its groups can no longer be checked.
            seen[doc_id] = record is not None and caller.may_read(record.access_groups)
        if all(seen[doc_id] for doc_id in ids):
            yield entry
