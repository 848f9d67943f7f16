"""Translation of Freki filters (ANDed ``FieldMatch`` conditions) into each engine's filter type.

One builder walks the conditions; a dialect per engine makes the clauses. Single values use ``MatchValue``;
several values use ``MatchAny`` when they are all str or all int (the only lists Qdrant's MatchAny takes),
otherwise an OR (``should``) of exact matches, which is how booleans and mixed types are matched. ``match_all``
is an AND of exact matches (on a list field each must be one of its elements). Ranges use Qdrant's float range,
which matches int and float payloads and any element of a list. ``fallback_key`` becomes
``key matches OR (key is empty AND fallback matches)``; ``or_empty`` becomes ``key matches OR key is empty``.
``exclude`` conditions go to ``must_not``, so a point
lacking the key matches them.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import numpy
import qdrant_edge as qe
from qdrant_client import models

from freki.store.base import FieldMatch, MatchValue, NumericRange

Conditions = tuple[FieldMatch, ...]


class _Dialect(Protocol):
    def value(self, key: str, value: MatchValue) -> Any: ...
    def any(self, key: str, values: list[MatchValue]) -> Any: ...
    def range(self, key: str, bounds: NumericRange) -> Any: ...
    def empty(self, key: str) -> Any: ...
    def filter(self, must: list[Any] | None = None, should: list[Any] | None = None,
               must_not: list[Any] | None = None) -> Any: ...


class _Edge:
    def value(self, key: str, value: MatchValue) -> Any:
        # qdrant-edge 0.9 reads a Python bool as the integer 0/1 (bool subclasses int), so MatchValue(True) never
        # matches a boolean payload. numpy.bool_ is not an int subclass and arrives as a real bool.
        match = qe.MatchValue(numpy.bool_(value) if isinstance(value, bool) else value)  # type: ignore[arg-type]
        return qe.FieldCondition(key, match=match)

    def any(self, key: str, values: list[MatchValue]) -> Any:
        return qe.FieldCondition(key, match=qe.MatchAny(cast(list[str], values)))

    def range(self, key: str, bounds: NumericRange) -> Any:
        return qe.FieldCondition(key, range=qe.RangeFloat(gte=bounds.gte, gt=bounds.gt, lte=bounds.lte, lt=bounds.lt))

    def empty(self, key: str) -> Any:
        return qe.IsEmptyCondition(key)

    def filter(self, must: list[Any] | None = None, should: list[Any] | None = None,
               must_not: list[Any] | None = None) -> Any:
        return qe.Filter(must=must, should=should, must_not=must_not)


class _Remote:
    def value(self, key: str, value: MatchValue) -> Any:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def any(self, key: str, values: list[MatchValue]) -> Any:
        return models.FieldCondition(key=key, match=models.MatchAny(any=cast(list[str], values)))

    def range(self, key: str, bounds: NumericRange) -> Any:
        return models.FieldCondition(
            key=key, range=models.Range(gte=bounds.gte, gt=bounds.gt, lte=bounds.lte, lt=bounds.lt)
        )

    def empty(self, key: str) -> Any:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))

    def filter(self, must: list[Any] | None = None, should: list[Any] | None = None,
               must_not: list[Any] | None = None) -> Any:
        return models.Filter(must=must, should=should, must_not=must_not)


def _clause(dialect: _Dialect, cond: FieldMatch, key: str) -> Any:
    if cond.range is not None:
        return dialect.range(key, cond.range)
    values = list(cond.values)
    if len(values) == 1:
        return dialect.value(key, values[0])
    if cond.match_all:
        return dialect.filter(must=[dialect.value(key, v) for v in values])
    if all(type(v) is str for v in values) or all(type(v) is int for v in values):
        return dialect.any(key, values)
    return dialect.filter(should=[dialect.value(key, v) for v in values])


def _condition(dialect: _Dialect, cond: FieldMatch) -> Any:
    if cond.or_empty:
        if not cond.values:
            return dialect.empty(cond.key)
        return dialect.filter(should=[_clause(dialect, cond, cond.key), dialect.empty(cond.key)])
    clause = _clause(dialect, cond, cond.key)
    if cond.fallback_key is None:
        return clause
    fallback = dialect.filter(must=[dialect.empty(cond.key), _clause(dialect, cond, cond.fallback_key)])
    return dialect.filter(should=[clause, fallback])


def _build(dialect: _Dialect, conditions: Conditions) -> Any:
    must: list[Any] = []
    must_not: list[Any] = []
    for cond in conditions:
        (must_not if cond.exclude else must).append(_condition(dialect, cond))
    if not must and not must_not:
        return None
    return dialect.filter(must=must or None, must_not=must_not or None)


def edge_filter(conditions: Conditions) -> qe.Filter | None:
    """Translate ANDed FieldMatch conditions into a qdrant-edge Filter (None = match everything)."""
    return cast("qe.Filter | None", _build(_Edge(), conditions))


def remote_filter(conditions: Conditions) -> models.Filter | None:
    """Translate ANDed FieldMatch conditions into a qdrant-client Filter (None = match everything)."""
    return cast("models.Filter | None", _build(_Remote(), conditions))
