"""Metadata filters for Freki, from Python values or ``odin`` command-line expressions.

``{"team": "kitchen", "tag": ["a", "b"]}`` is the short form (keys ANDed, a key's values ORed). ``Filter`` says
everything Freki's ``MetadataFilter`` can: every value required (``all``), negation (``exclude``) and numeric or
date ranges. On the command line: ``--filter 'topics=health'``, ``'lang!=de'``, ``'year>=2020'``,
``'published<2024-01-01'``; ``--filter-all 'topics=health'`` requires every value given for that key.
``@document_id``, ``@source``, ``@content_type`` and ``@owner_id`` name Freki's system fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wolf.v1 import common_pb2

from odin_client.types.errors import InvalidRequest

_EXPRESSION = re.compile(r"^\s*(@?[A-Za-z_][A-Za-z0-9_.\-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$")
_BOUNDS = {">=": "gte", ">": "gt", "<=": "lte", "<": "lt"}


@dataclass
class Filter:
    """One condition on document metadata (see ``wolf.v1.MetadataFilter``)."""

    key: str
    values: Sequence[str] = ()
    exclude: bool = False
    all: bool = False
    bounds: dict[str, str] = field(default_factory=dict)  # {"gte": "2020", "lt": "2024-01-01"}

    def to_proto(self) -> common_pb2.MetadataFilter:
        if not self.key or not (self.values or self.bounds):
            raise InvalidRequest(f"filter {self.key!r} needs a key and at least one value or bound")
        return common_pb2.MetadataFilter(
            key=self.key, values=list(self.values), exclude=self.exclude,
            match=common_pb2.METADATA_MATCH_ALL if self.all else common_pb2.METADATA_MATCH_ANY, **self.bounds,
        )


Filters = Mapping[str, str | Sequence[str]] | Sequence[Filter]


def metadata_filters(filters: Filters | None) -> list[common_pb2.MetadataFilter]:
    """Filters in either form as MetadataFilter messages."""
    if not filters:
        return []
    if isinstance(filters, Mapping):
        return [Filter(key, [value] if isinstance(value, str) else list(value)).to_proto()
                for key, value in filters.items()]
    return [f.to_proto() for f in filters]


def parse_expressions(any_of: Sequence[str] | None, all_of: Sequence[str] | None = None) -> list[Filter]:
    """``--filter`` and ``--filter-all`` expressions as Filters (one per key and kind, in order of appearance)."""
    found: dict[tuple[str, str], Filter] = {}
    for flag, items in (("--filter", any_of), ("--filter-all", all_of)):
        for item in items or ():
            match = _EXPRESSION.match(item)
            if not match:
                raise InvalidRequest(f"{flag} expects KEY=VALUE, KEY!=VALUE, KEY>=VALUE, KEY>VALUE, KEY<=VALUE or "
                                     f"KEY<VALUE (got {item!r})")
            key, op, value = match.groups()
            if flag == "--filter-all" and op != "=":
                raise InvalidRequest(f"--filter-all takes KEY=VALUE only (got {item!r})")
            kind = "range" if op in _BOUNDS else f"{op}{flag}"
            flt = found.setdefault((key, kind), Filter(key, (), exclude=op == "!=", all=flag == "--filter-all"))
            if op in _BOUNDS:
                flt.bounds[_BOUNDS[op]] = value
            else:
                flt.values = (*flt.values, value)
    return list(found.values())
