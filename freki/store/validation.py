"""Input checks shared by both store engines.

Everything a caller hands the store is checked here, before the engine is touched, so a bad batch is refused
whole (the index stays as it was) with a message that names the offending point or field.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from typing import Any, cast

import numpy

from freki.store.base import ChunkPoint, CollectionSpec, ConvexWeights, FieldMatch, NumericRange, SparseVector
from freki.store.errors import EmbeddingModelMismatch, InvalidStoreInput

_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")
_INT64 = (-(2**63), 2**63 - 1)
_SPARSE_INDEX_MAX = 2**32 - 1  # Qdrant stores sparse indices as u32


def check_collection_name(name: str) -> str:
    """Return ``name`` if it is usable both as a Qdrant collection and as a directory name."""
    if not isinstance(name, str) or not _COLLECTION_NAME.match(name):
        raise InvalidStoreInput(
            f"collection name must be 1-63 letters, digits, '_' or '-', starting with a letter or digit (got {name!r})"
        )
    return name


def check_spec(spec: CollectionSpec) -> CollectionSpec:
    """Validate a collection spec."""
    check_collection_name(spec.name)
    if isinstance(spec.dense_dim, bool) or not isinstance(spec.dense_dim, int) or spec.dense_dim < 1:
        raise InvalidStoreInput(f"dense_dim must be a positive integer (got {spec.dense_dim!r})")
    if not isinstance(spec.embedding_model, str) or not spec.embedding_model.strip():
        raise InvalidStoreInput(f"embedding_model must be a non-empty string (got {spec.embedding_model!r})")
    return spec


def canonical_id(point_id: str) -> str:
    """Return the canonical form of a UUID point id, or raise naming the bad id."""
    if not isinstance(point_id, str):
        raise InvalidStoreInput(f"point id must be a UUID string (got {type(point_id).__name__} {point_id!r})")
    try:
        return str(uuid.UUID(point_id))
    except ValueError:
        raise InvalidStoreInput(f"point id must be a UUID string (got {point_id!r})") from None


def canonical_ids(ids: Sequence[str]) -> list[str]:
    """Canonicalise a list of ids, dropping duplicates but keeping first-seen order."""
    if isinstance(ids, str):
        raise InvalidStoreInput(f"expected a sequence of point ids, got the single string {ids!r}")
    return list(dict.fromkeys(canonical_id(i) for i in ids))


def check_dense(vector: Sequence[float], dim: int, what: str = "dense vector") -> list[float]:
    """Return ``vector`` as a list of floats after checking size, finiteness and non-zero length."""
    try:
        # numpy, not a Python loop: indexing batches hold thousands of vectors of hundreds of floats
        array = numpy.asarray(vector, dtype=numpy.float64)
    except (TypeError, ValueError):
        raise InvalidStoreInput(f"{what} must be a sequence of numbers") from None
    if array.ndim != 1 or array.shape[0] != dim:
        got = array.shape[0] if array.ndim == 1 else f"shape {array.shape}"
        raise InvalidStoreInput(f"{what} has {got} dimensions, the collection expects {dim}")
    if not numpy.isfinite(array).all():
        raise InvalidStoreInput(f"{what} contains NaN or infinity")
    if not array.any():
        raise InvalidStoreInput(f"{what} is all zeros; cosine similarity is undefined for it")
    return cast(list[float], array.tolist())


def check_sparse(vector: SparseVector, what: str = "sparse vector") -> SparseVector:
    """Return a sparse vector with plain int/float lists after checking its shape and values."""
    indices, values = list(vector.indices), list(vector.values)
    if len(indices) != len(values):
        raise InvalidStoreInput(f"{what} has {len(indices)} indices but {len(values)} values")
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= _SPARSE_INDEX_MAX:
            raise InvalidStoreInput(f"{what} index {i!r} is not an integer in [0, 2^32)")
    if len(set(indices)) != len(indices):
        raise InvalidStoreInput(f"{what} has duplicate indices")
    floats = [float(v) for v in values]
    if not all(math.isfinite(v) for v in floats):
        raise InvalidStoreInput(f"{what} contains NaN or infinity")
    return SparseVector(indices=[int(i) for i in indices], values=floats)


def _check_scalar(value: Any, where: str) -> None:
    if isinstance(value, bool | str):
        return
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidStoreInput(f"payload {where} is an integer outside the 64-bit range")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidStoreInput(f"payload {where} is NaN or infinity")
        return
    raise InvalidStoreInput(f"payload {where} has unsupported type {type(value).__name__}; use str/int/float/bool")


def check_payload(payload: dict[str, Any], what: str = "payload") -> dict[str, Any]:
    """Check a payload: str keys; values scalar, a list of scalars, or a dict of str -> scalar or list of scalars."""
    if not isinstance(payload, dict):
        raise InvalidStoreInput(f"{what} must be a dict (got {type(payload).__name__})")
    for key, value in payload.items():
        if not isinstance(key, str) or not key:
            raise InvalidStoreInput(f"{what} keys must be non-empty strings (got {key!r})")
        if isinstance(value, dict):
            for sub_key, sub_value in value.items():
                if not isinstance(sub_key, str) or not sub_key:
                    raise InvalidStoreInput(f"{what} key {key!r} has a non-string or empty key {sub_key!r}")
                if isinstance(sub_value, list | tuple):
                    for item in sub_value:
                        _check_scalar(item, f"list {key}.{sub_key} item")
                else:
                    _check_scalar(sub_value, f"value {key}.{sub_key}")
        elif isinstance(value, list | tuple):
            for item in value:
                _check_scalar(item, f"list {key!r} item")
        else:
            _check_scalar(value, f"value {key!r}")
    return payload


def check_points(points: Sequence[ChunkPoint], spec: CollectionSpec) -> list[ChunkPoint]:
    """Validate a batch of points for ``spec`` and return canonical copies (canonical ids, plain lists)."""
    checked: list[ChunkPoint] = []
    seen: set[str] = set()
    for n, point in enumerate(points):
        if not isinstance(point, ChunkPoint):
            raise InvalidStoreInput(f"point #{n} must be a ChunkPoint (got {type(point).__name__})")
        pid = canonical_id(point.id)
        if pid in seen:
            raise InvalidStoreInput(f"point id {pid} appears twice in one batch")
        seen.add(pid)
        dense = check_dense(point.dense, spec.dense_dim, f"dense vector of point {pid}")
        sparse = None
        if point.sparse is not None:
            if not spec.sparse:
                raise InvalidStoreInput(
                    f"point {pid} has a sparse vector but collection {spec.name!r} was created without one"
                )
            sparse = check_sparse(point.sparse, f"sparse vector of point {pid}")
        checked.append(ChunkPoint(pid, dense, sparse, check_payload(point.payload, f"payload of point {pid}")))
    return checked


def _check_field_path(key: object, what: str) -> str:
    if not isinstance(key, str) or not key or key.startswith(".") or key.endswith("."):
        raise InvalidStoreInput(f"{what} must be a non-empty (dotted) field path (got {key!r})")
    return key


def _check_range(cond: FieldMatch) -> NumericRange:
    bounds = cond.range
    if not isinstance(bounds, NumericRange):
        raise InvalidStoreInput(f"filter on {cond.key!r} has range {bounds!r}; expected a NumericRange")
    given = [b for b in (bounds.gte, bounds.gt, bounds.lte, bounds.lt) if b is not None]
    if not given:
        raise InvalidStoreInput(f"range filter on {cond.key!r} has no bound")
    if any(isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b) for b in given):
        raise InvalidStoreInput(f"range filter on {cond.key!r} has a bound that is not a finite number")
    if cond.values:
        raise InvalidStoreInput(f"filter on {cond.key!r} has both values and a range; give one")
    return bounds


def check_filter(filter: Sequence[FieldMatch]) -> tuple[FieldMatch, ...]:
    """Validate a filter and return it as a tuple."""
    if isinstance(filter, FieldMatch):
        raise InvalidStoreInput("filter must be a sequence of FieldMatch; wrap a single one in a list")
    checked = []
    for cond in filter:
        if not isinstance(cond, FieldMatch):
            raise InvalidStoreInput(f"filter items must be FieldMatch (got {type(cond).__name__})")
        _check_field_path(cond.key, "filter key")
        if cond.fallback_key is not None:
            _check_field_path(cond.fallback_key, f"fallback key of the filter on {cond.key!r}")
        if cond.range is not None:
            _check_range(cond)
        elif not cond.values and not cond.or_empty:
            raise InvalidStoreInput(f"filter on {cond.key!r} has no values; give at least one value to match")
        for value in cond.values:
            if not isinstance(value, str | int) or (
                isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]
            ):
                raise InvalidStoreInput(
                    f"filter on {cond.key!r} has value {value!r}; only str, int and bool values can be matched"
                )
        checked.append(FieldMatch(
            cond.key, tuple(cond.values), bool(cond.exclude), bool(cond.match_all), cond.range, cond.fallback_key,
            bool(cond.or_empty),
        ))
    return tuple(checked)


def check_limit(limit: int, what: str = "limit") -> int:
    """Return ``limit`` if it is a positive integer."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidStoreInput(f"{what} must be a positive integer (got {limit!r})")
    return limit


def check_weights(weights: ConvexWeights) -> ConvexWeights:
    """Return ``weights`` if the sparse weight is in [0, 1] and the half score positive and finite."""
    w, half = weights.sparse_weight, weights.sparse_half
    if not (isinstance(w, int | float) and 0.0 <= w <= 1.0):
        raise InvalidStoreInput(f"sparse_weight must be in [0, 1] (got {w!r})")
    if not (isinstance(half, int | float) and 0.0 < half < math.inf):
        raise InvalidStoreInput(f"sparse_half must be a positive finite number (got {half!r})")
    scale, shift = weights.cosine_scale, weights.cosine_shift
    if not (isinstance(scale, int | float) and 0.0 < scale <= 1000.0):
        raise InvalidStoreInput(f"cosine_scale must be in (0, 1000] (got {scale!r})")
    if not (isinstance(shift, int | float) and -1000.0 <= shift <= 1000.0):
        raise InvalidStoreInput(f"cosine_shift must be in [-1000, 1000] (got {shift!r})")
    return ConvexWeights(float(w), float(half), float(scale), float(shift))


def check_recorded_spec(record: dict[str, object], spec: CollectionSpec, where: str) -> None:
    """Raise EmbeddingModelMismatch unless the recorded model, dim and sparse flag match ``spec``."""
    model, dim = record.get("embedding_model"), record.get("dense_dim")
    if model != spec.embedding_model or dim != spec.dense_dim:
        raise EmbeddingModelMismatch(
            f"collection {spec.name!r} ({where}) holds vectors from embedding model {model!r} "
            f"(dim {dim}), but {spec.embedding_model!r} (dim {spec.dense_dim}) was requested; use a new "
            "collection name, or run a full re-index into a fresh collection"
        )
    if bool(record.get("sparse")) != spec.sparse:
        raise EmbeddingModelMismatch(
            f"collection {spec.name!r} ({where}) was created with sparse={record.get('sparse')}, but "
            f"sparse={spec.sparse} was requested; use a new collection name or re-index into a fresh one"
        )
