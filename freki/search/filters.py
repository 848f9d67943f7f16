"""A caller's ``MetadataFilter`` as the store conditions it means.

Keys name the caller's metadata (``metadata.<key>``); system fields have ``@`` names (``@document_id``,
``@source``, ``@content_type``, ``@owner_id``) that no metadata key can take. The bare names older clients used
for system fields still reach them, but only on documents whose own metadata does not set that key: the
caller's value wins (``FieldMatch.fallback_key``). Range bounds compare with ``metadata_num.<key>`` (numbers) or
``metadata_date.<key>`` (ISO 8601 dates, as epoch seconds); see ``freki.store.metadata``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from freki.store import FieldMatch, NumericRange
from freki.store.metadata import parse_date, parse_number
from wolf_service.errors import InvalidArgument

# "@" names of system payload fields.
SYSTEM_FIELDS = {
    "@document_id": "document_id",
    "@source": "source",
    "@content_type": "source_type",
    "@owner_id": "owner_id",
}
# Bare names that reached system fields before metadata had its own namespace (kept for old clients).
LEGACY_SYSTEM_KEYS = {
    "document_id": "document_id",
    "source": "source",
    "source_type": "source_type",
    "content_type": "source_type",
    "owner_id": "owner_id",
}
BOUNDS = ("gte", "gt", "lte", "lt")


@dataclass(frozen=True)
class CallerFilter:
    """One filter as the caller sent it (the fields of ``MetadataFilter``)."""

    key: str
    values: Sequence[str] = ()
    exclude: bool = False
    match_all: bool = False
    bounds: dict[str, str] | None = None  # {"gte": "2024-01-01", ...}


def to_condition(flt: CallerFilter, where: str = "filter") -> FieldMatch:
    """The store condition ``flt`` means; INVALID_ARGUMENT naming ``where`` when it means nothing."""
    if flt.key.startswith("@"):
        if flt.key not in SYSTEM_FIELDS:
            raise InvalidArgument(
                f"{where}.key {flt.key[:40]!r} is not a system field; those are {', '.join(sorted(SYSTEM_FIELDS))}"
            )
        if flt.bounds:
            raise InvalidArgument(f"{where} ({flt.key}) is a text field; it takes values, not range bounds")
        return FieldMatch(SYSTEM_FIELDS[flt.key], tuple(flt.values), flt.exclude, flt.match_all)
    if flt.bounds:
        if flt.values:
            raise InvalidArgument(f"{where} ({flt.key}) has both values and range bounds; give one or the other")
        return FieldMatch(*_range_field(flt, where))
    return FieldMatch(
        f"metadata.{flt.key}", tuple(flt.values), flt.exclude, flt.match_all,
        fallback_key=LEGACY_SYSTEM_KEYS.get(flt.key),
    )


def _range_field(flt: CallerFilter, where: str) -> tuple[str, tuple[()], bool, bool, NumericRange]:
    bounds = flt.bounds or {}
    for parse, field in ((parse_number, "metadata_num"), (parse_date, "metadata_date")):
        parsed = {name: parse(text) for name, text in bounds.items()}
        if all(v is not None for v in parsed.values()):
            return f"{field}.{flt.key}", (), flt.exclude, False, NumericRange(**parsed)
    shown = ", ".join(f"{name}={text[:40]!r}" for name, text in bounds.items())
    raise InvalidArgument(
        f"{where} ({flt.key}) range bounds must all be numbers or all ISO 8601 dates "
        f"(e.g. '2.5' or '2024-05-01T10:00:00Z'); got {shown}"
    )
