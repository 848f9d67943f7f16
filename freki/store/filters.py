"""Translation of Freki filters (ANDed ``FieldMatch`` conditions) into each engine's filter type.

Single values use ``MatchValue``; several values use ``MatchAny`` when they are all str or all int (the only
lists Qdrant's MatchAny takes), otherwise an OR (``should``) of exact matches, which is how booleans and mixed
types are matched. ``exclude`` conditions go to ``must_not``, so a point lacking the key matches them.
"""

from __future__ import annotations

from typing import Any, cast

import numpy
import qdrant_edge as qe
from qdrant_client import models

from freki.store.base import FieldMatch

Conditions = tuple[FieldMatch, ...]


def _match_value(value: str | int | bool) -> qe.MatchValue:
    # qdrant-edge 0.9 reads a Python bool as the integer 0/1 (bool subclasses int), so MatchValue(True) never
    # matches a boolean payload. numpy.bool_ is not an int subclass and arrives as a real bool.
    return qe.MatchValue(numpy.bool_(value) if isinstance(value, bool) else value)  # type: ignore[arg-type]


def edge_filter(conditions: Conditions) -> qe.Filter | None:
    """Translate ANDed FieldMatch conditions into a qdrant-edge Filter (None = match everything)."""
    must: list[Any] = []
    must_not: list[Any] = []
    for cond in conditions:
        values = list(cond.values)
        clause: Any
        if len(values) == 1:
            clause = qe.FieldCondition(cond.key, match=_match_value(values[0]))
        elif all(type(v) is str for v in values) or all(type(v) is int for v in values):
            clause = qe.FieldCondition(cond.key, match=qe.MatchAny(cast(list[str], values)))
        else:  # MatchAny takes only all-str or all-int lists; bools and mixes become an OR of exact matches
            clause = qe.Filter(should=[qe.FieldCondition(cond.key, match=_match_value(v)) for v in values])
        (must_not if cond.exclude else must).append(clause)
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)


def remote_filter(conditions: Conditions) -> models.Filter | None:
    """Translate ANDed FieldMatch conditions into a qdrant-client Filter (None = match everything)."""
    must: list[Any] = []
    must_not: list[Any] = []
    for cond in conditions:
        values = list(cond.values)
        clause: Any
        if len(values) == 1:
            clause = models.FieldCondition(key=cond.key, match=models.MatchValue(value=values[0]))
        elif all(type(v) is str for v in values) or all(type(v) is int for v in values):
            clause = models.FieldCondition(key=cond.key, match=models.MatchAny(any=cast(list[str], values)))
        else:  # MatchAny takes only all-str or all-int lists; bools and mixes become an OR of exact matches
            clause = models.Filter(
                should=[models.FieldCondition(key=cond.key, match=models.MatchValue(value=v)) for v in values]
            )
        (must_not if cond.exclude else must).append(clause)
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)
