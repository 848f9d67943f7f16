"""Access groups inside a tenant, as store conditions (docs/decisions/0261-access-inside-a-tenant.md).

Every chunk, registry record and link point of a document carries the document's ``access_groups`` (a list;
empty = tenant-wide). A caller restricted to groups ``G`` sees a point when its list is empty or shares one
element with ``G``: one condition, ANDed into the store query of every read, so a hidden document is never
fetched, scored or counted.
"""

from __future__ import annotations

from collections.abc import Iterable

from freki.store.base import FieldMatch

ACCESS_FIELD = "access_groups"


def visible_to(groups: Iterable[str] | None) -> tuple[FieldMatch, ...]:
    """The conditions for what a caller holding ``groups`` may read; () when unrestricted (None)."""
    if groups is None:
        return ()
    return (FieldMatch(ACCESS_FIELD, tuple(sorted(groups)), or_empty=True),)

