"""Per-chunk integrity: a checksum of each point's payload and a sketch of its dense vector, checked on read.

``SealedStore`` records ``check`` in every point it writes (inside the sealed blob, so AES-GCM authenticates it
too; in the plain payload when sealing is off): ``p``, a SHA-256 of the plain payload fields, and ``v``, the
vector's sketch — its dot products with ``SKETCH_SIZE`` fixed ±1 vectors after unit normalisation. The engine
stores vectors normalised with its own SIMD arithmetic, so the bytes it returns differ from ours in the last
bits and an exact hash of them cannot be recomputed; the sketch matches within ``SKETCH_TOLERANCE`` and any
change of one component by more than that moves every projection. Details and costs:
docs/decisions/0221-disk-and-integrity.md.

A point that fails (or whose payload the engine cannot decode, or whose sealed blob does not authenticate) is
*quarantined*: never returned, counted, listed in GetIndexStatus, and its document re-indexed from the kept
source by the engine's healer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from freki.store.base import SparseVector, StoredPoint
from freki.store.errors import CorruptData, StoreError

log = logging.getLogger("freki.integrity")

CHECK = "check"
SKETCH_SIZE = 8
SKETCH_TOLERANCE = 1e-3
_SIGNS: dict[int, np.ndarray] = {}


def _signs(dim: int) -> np.ndarray:
    if dim not in _SIGNS:  # fixed per dimension: a digest stream, independent of any RNG implementation
        raw = b"".join(hashlib.sha256(f"freki-sketch-{dim}-{i}".encode()).digest()
                       for i in range((SKETCH_SIZE * dim + 255) // 256))
        bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[: SKETCH_SIZE * dim]
        _SIGNS[dim] = (bits.astype(np.float64) * 2 - 1).reshape(SKETCH_SIZE, dim)
    return _SIGNS[dim]


def sketch(dense: Sequence[float]) -> list[float]:
    """The vector's sketch (see the module docstring), rounded to 6 decimals."""
    v = np.asarray(dense, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    if norm > 0:
        v = v / norm
    return [round(float(x), 6) for x in _signs(len(v)) @ v]


def payload_digest(plain: dict[str, Any]) -> str:
    """SHA-256 (128 bits, hex) of the plain payload fields, keys sorted."""
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def sparse_digest(sparse: SparseVector) -> str:
    """SHA-256 (128 bits, hex) of a sparse vector as the engine keeps it: indices in order, float32 weights."""
    order = np.argsort(np.asarray(sparse.indices, dtype=np.int64), kind="stable")
    indices = np.asarray(sparse.indices, dtype=np.uint32)[order]
    values = np.asarray(sparse.values, dtype=np.float32)[order]
    return hashlib.sha256(indices.tobytes() + values.tobytes()).hexdigest()[:32]


def make_check(plain: dict[str, Any], dense: Sequence[float], sparse: SparseVector | None = None) -> dict[str, Any]:
    """What ``SealedStore`` records with a point: the digest of ``plain``, the sketch of ``dense`` and the digest
    of ``sparse`` (when the point has one)."""
    check: dict[str, Any] = {"p": payload_digest(plain), "v": sketch(dense)}
    if sparse is not None:
        check["s"] = sparse_digest(sparse)
    return check


def verify(check: Any, plain: dict[str, Any], dense: Sequence[float] | None,
           sparse: SparseVector | None = None) -> str | None:
    """Why the point fails its check, or None. ``dense`` / ``sparse`` None: that vector is not checked (a
    check written without ``s`` does not check the sparse vector either)."""
    if not isinstance(check, dict):
        return "checksum missing or malformed"
    if check.get("p") != payload_digest(plain):
        return "payload checksum"
    if sparse is not None and isinstance(check.get("s"), str) and check["s"] != sparse_digest(sparse):
        return "sparse vector checksum"
    recorded = check.get("v")
    if dense is not None and isinstance(recorded, list) and len(recorded) == SKETCH_SIZE:
        got = sketch(dense)
        if not all(np.isfinite(got)) or max(abs(a - b) for a, b in zip(got, recorded, strict=True)) > SKETCH_TOLERANCE:
            return "vector checksum"
    return None


def read_points(inner: Any, ids: Sequence[str], with_sparse: bool = False) -> tuple[list[StoredPoint], dict[str, str]]:
    """The points of ``ids`` with payload and dense vector (and sparse, ``with_sparse``); when the engine fails
    on the batch (a payload it cannot decode), point by point. Returns (points read, {id: why unreadable})."""
    try:
        return list(inner.retrieve(ids, with_vectors=True, with_sparse=with_sparse)), {}
    except StoreError:
        pass
    points: list[StoredPoint] = []
    bad: dict[str, str] = {}
    for point_id in ids:
        try:
            points.extend(inner.retrieve([point_id], with_vectors=True, with_sparse=with_sparse))
        except StoreError as exc:
            bad[point_id] = f"payload unreadable ({str(exc)[:200]})"
    return points, bad


@dataclass(frozen=True)
class QuarantinedChunk:
    """A point that failed its integrity check."""

    chunk_id: str
    collection: str
    reason: str
    tenant_id: str = ""
    document_id: str = ""
    detected_at: str = ""
    heal: str = "pending"  # "pending" | "healing" | "failed: <why>"


class Quarantine:
    """The points found corrupt: never served; ``listeners`` hear of each new one (the healer).

    With a ``path`` the list is kept in that JSON file (ids, owner, reason and heal state, no content), written
    whole on every change and read at start, so a restart lists what was found before any read meets it again
    and the healer picks up what was pending. A file that cannot be read is logged and started afresh: reads
    and the scrub find the points again.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._entries: dict[str, QuarantinedChunk] = {}
        self._lock = threading.Lock()
        self._path = path
        self.detected = 0  # points quarantined since start, for the metric
        self.healed = 0  # points whose document was re-indexed since start
        self.listeners: list[Callable[[QuarantinedChunk], None]] = []
        if path is not None:
            self._entries = _load(path)

    def _save(self) -> None:
        """Write the list (holding ``_lock``): a temporary file, then an atomic rename."""
        if self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._path.with_suffix(".tmp")
            tmp.write_text(json.dumps([asdict(e) for e in self._entries.values()]))
            os.replace(tmp, self._path)
        except OSError as exc:  # a full or read-only disk: the list still holds in memory
            log.warning("cannot keep the quarantine list in %s (%s); it holds until a restart", self._path, exc)

    def add(self, chunk_id: str, collection: str, reason: str, payload: dict[str, Any] | None) -> None:
        payload = payload or {}
        entry = QuarantinedChunk(chunk_id, collection, reason, str(payload.get("tenant_id", "")),
                                 str(payload.get("document_id", "")), datetime.now(UTC).isoformat(timespec="seconds"))
        with self._lock:
            if chunk_id in self._entries:
                return
            self._entries[chunk_id] = entry
            self.detected += 1
            self._save()
        log.error("chunk %s of collection %r (document %r, tenant %r) failed its integrity check (%s): "
                  "quarantined, not served", chunk_id, collection, entry.document_id, entry.tenant_id, reason)
        for listener in list(self.listeners):
            listener(entry)

    def mark(self, chunk_ids: Sequence[str], heal: str, owner: tuple[str, str] | None = None) -> None:
        """Set the heal state (and the owning tenant and document, once found) of quarantined points."""
        with self._lock:
            for i in chunk_ids:
                if i in self._entries:
                    entry = replace(self._entries[i], heal=heal)
                    if owner is not None:
                        entry = replace(entry, tenant_id=owner[0], document_id=owner[1])
                    self._entries[i] = entry
            self._save()

    def resolve(self, chunk_ids: Sequence[str]) -> None:
        """The points are gone (their document was re-indexed or deleted)."""
        with self._lock:
            for i in chunk_ids:
                if self._entries.pop(i, None) is not None:
                    self.healed += 1
            self._save()

    def forget(self, tenant: str, document_id: str | None = None) -> None:
        """Drop the entries of a deleted document, or of every document of a tenant (the kept list must not
        outlive an erasure)."""
        with self._lock:
            drop = [i for i, e in self._entries.items()
                    if e.tenant_id == tenant and (document_id is None or e.document_id == document_id)]
            for i in drop:
                del self._entries[i]
            if drop:
                self._save()

    def entries(self, tenant: str | None = None) -> list[QuarantinedChunk]:
        with self._lock:
            return [e for e in self._entries.values() if tenant is None or e.tenant_id in (tenant, "")]

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._entries


def report(quarantine: Quarantine | None, chunk_id: str, collection: str, reason: str,
           payload: dict[str, Any] | None) -> None:
    """Quarantine the point, or — for a store that serves no chunks (registry, sources) — fail loudly."""
    if quarantine is None:
        raise CorruptData(f"point {chunk_id} of collection {collection!r} is corrupt ({reason}); run `freki verify` "
                          "and restore the data dir from a backup or re-index (docs/operations.md, \"Integrity\")")
    quarantine.add(chunk_id, collection, reason, payload)


def _load(path: Path) -> dict[str, QuarantinedChunk]:
    """The entries kept in ``path`` (none if it is missing or unreadable); one being healed when the last
    process stopped is pending again."""
    if not path.exists():
        return {}
    names = {f.name for f in fields(QuarantinedChunk)}
    try:
        rows = json.loads(path.read_text())
        entries = [QuarantinedChunk(**{k: str(v) for k, v in row.items() if k in names}) for row in rows]
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("the quarantine list %s cannot be read (%s); starting with an empty one (reads and the scrub "
                    "find corrupt chunks again)", path, exc)
        return {}
    return {e.chunk_id: replace(e, heal="pending") if e.heal == "healing" else e for e in entries}
