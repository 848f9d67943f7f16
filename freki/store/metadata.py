"""Metadata values as Freki stores and filters them.

A metadata value is a string or a list of strings (YAML frontmatter lists, ``metadata_lists`` in a request).
Beside the strings, every value that reads as a number or an ISO 8601 date is stored a second time in a typed
field, so that range filters work without the caller declaring types:

* ``metadata_num.<key>``: the number (``3``, ``-2.5``, ``1e3``), or the numbers of a list;
* ``metadata_date.<key>``: seconds since the epoch (UTC) of a date or date-time (``2024-05-01``,
  ``2024-05-01T10:00:00+02:00``; a date-time without a zone is read as UTC), or of each date of a list.

Matching by value always uses the strings (``metadata.<key>``), so ``year: 2024`` still matches the filter value
"2024".
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

MetaValue = str | list[str]
Metadata = dict[str, MetaValue]

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")


def parse_number(text: str) -> float | None:
    """The finite number ``text`` spells (surrounding spaces allowed), else None."""
    text = text.strip()
    if len(text) > 64 or not _NUMBER.match(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def parse_date(text: str) -> float | None:
    """Seconds since the epoch of an ISO 8601 date or date-time (naive = UTC), else None."""
    text = text.strip()
    if not _DATE.match(text):
        return None
    try:
        stamp = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.UTC)
    return stamp.timestamp()


def display(value: Any) -> str:
    """A metadata value as one string (lists joined by ", ", as the ``metadata`` maps of the API show them)."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def normalise(value: Any) -> MetaValue:
    """A stored or parsed value as str or list[str]."""
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


def typed_fields(metadata: Metadata) -> dict[str, dict[str, float | list[float]]]:
    """The ``metadata_num`` and ``metadata_date`` payload fields for ``metadata`` (empty ones left out)."""
    out: dict[str, dict[str, float | list[float]]] = {}
    for field, parse in (("metadata_num", parse_number), ("metadata_date", parse_date)):
        typed: dict[str, float | list[float]] = {}
        for key, value in metadata.items():
            if isinstance(value, list):
                numbers = [n for n in (parse(v) for v in value) if n is not None]
                if numbers:
                    typed[key] = numbers
            elif (number := parse(value)) is not None:
                typed[key] = number
        if typed:
            out[field] = typed
    return out
