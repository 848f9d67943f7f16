"""``SealedStore``: a ``VectorStore`` that encrypts payload text per document generation and hides
generations that are not (or no longer) committed.

Sealing: the payload fields named in ``fields`` (chunk text, source, hashes, metadata of a registry record)
are written as one AES-256-GCM blob (``sealed``) under the key of the point's ``generation``
(``freki.store.keys.KeyStore``), bound to the point id. Reads open it again, so every layer above sees plain
payloads. Destroying a generation's key shreds its text everywhere the engine copied it (segments, WAL,
server storage); a point whose key is gone is never returned. Fields used in filters (tenant, owner,
document id, generation, source type, chunk index, caller metadata in chunk payloads) stay plain: the
engine must compare them. ``purge`` (edge engine) removes those from disk too (docs/operations.md, GDPR).

Integrity (``freki.store.integrity``): every point written carries a checksum of its payload and a sketch of its
vector, checked on every read; a point that fails is quarantined (``quarantine`` set: chunk collections) or
raises ``CorruptData`` (registry, sources).

Visibility: ``Generations`` holds the generations being written (not committed yet) and those being
retired (replaced, not deleted yet); every read excludes them, so a reader sees each document whole in
one committed version. Writes and deletes are not filtered.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from freki.store.base import (
    ChunkPoint,
    CollectionSpec,
    ConvexWeights,
    FieldMatch,
    ScoredPoint,
    SparseVector,
    StoredPoint,
)
from freki.store.errors import CorruptData, InvalidStoreInput, StoreError
from freki.store.generations import Generations
from freki.store.integrity import CHECK, Quarantine, make_check, read_points, report, verify
from freki.store.keys import KeyStore

SEALED = "sealed"
GENERATION = "generation"
_NONCE = 12
_P = TypeVar("_P", ScoredPoint, StoredPoint)


class SealedStore:
    """Wraps a store: seals ``fields`` on write, opens them on read, hides ``generations``' hidden ones."""

    def __init__(
        self, inner: Any, keys: KeyStore, fields: Sequence[str], generations: Generations | None = None,
    ) -> None:
        self.inner = inner
        self.keys = keys
        self.fields = tuple(fields)
        self.generations = generations or Generations()
        self.backend: str = inner.backend
        # Shared collections (store.shared): (tenant, document ids) -> their committed generations. Reads
        # then drop points of any other generation: another replica's version being written or retired,
        # which this process's ``generations`` cannot know about.
        self.committed: Callable[[str, set[str]], dict[str, str]] | None = None
        # Corrupt points go here and are skipped; None: a corrupt point raises CorruptData.
        self.quarantine: Quarantine | None = None

    # -- passthrough ---------------------------------------------------------------------------------------
    @property
    def collection(self) -> str | None:
        return self.inner.collection  # type: ignore[no-any-return]

    def ensure_collection(self, spec: CollectionSpec) -> None:
        self.inner.ensure_collection(spec)

    def delete_ids(self, ids: Sequence[str]) -> None:
        self.inner.delete_ids(ids)

    def delete_where(self, filter: Sequence[FieldMatch]) -> int:
        return int(self.inner.delete_where(filter))

    def optimize(self) -> None:
        self.inner.optimize()

    def purge(self) -> bool:
        return bool(self.inner.purge())

    def value_counts(self, key: str, filter: Sequence[FieldMatch] = ()) -> dict[str, int]:
        return dict(self.inner.value_counts(key, filter))

    def close(self) -> None:
        self.inner.close()

    # -- writes --------------------------------------------------------------------------------------------
    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        self.apply(points, [], [])

    def set_payload(self, ids: Sequence[str], payload: dict[str, Any]) -> None:
        self.apply([], [], [(ids, payload)])

    def apply(
        self, upserts: Sequence[ChunkPoint], delete_ids: Sequence[str],
        payload_updates: Sequence[tuple[Sequence[str], dict[str, Any]]],
    ) -> None:
        for _, payload in payload_updates:
            touched = [f for f in (*self.fields, GENERATION, SEALED) if f in payload]
            if touched:
                raise InvalidStoreInput(f"payload fields {touched} are sealed per generation; upsert the point instead")
        self.inner.apply([self._seal(p) for p in upserts], delete_ids, payload_updates)

    def _seal(self, point: ChunkPoint) -> ChunkPoint:
        payload = {k: v for k, v in point.payload.items() if k != CHECK}
        if not self.fields:  # sealing switched off (gdpr.encrypt_payloads: false): checksum in the plain payload
            check = make_check(payload, point.dense, point.sparse)
            return ChunkPoint(point.id, point.dense, point.sparse, {**payload, CHECK: check})
        generation = payload.get(GENERATION)
        if not isinstance(generation, str) or not generation:
            raise InvalidStoreInput(f"point {point.id} has no {GENERATION!r}: sealed payloads need one")
        plain = {k: v for k, v in payload.items() if k not in self.fields}
        secret = {f: payload[f] for f in self.fields if f in payload}
        secret[CHECK] = make_check(plain, point.dense, point.sparse)
        key = self.keys.get_or_create(generation, str(payload.get("tenant_id", "")),
                                      str(payload.get("owner_id", "")), str(payload.get("document_id", "")))
        nonce = os.urandom(_NONCE)
        blob = nonce + AESGCM(key).encrypt(nonce, json.dumps(secret).encode(), point.id.encode())
        plain[SEALED] = base64.b64encode(blob).decode("ascii")
        return ChunkPoint(point.id, point.dense, point.sparse, plain)

    # -- reads ---------------------------------------------------------------------------------------------
    def open(self, point_id: str, payload: dict[str, Any], hidden: tuple[str, ...] = (),
             dense: Sequence[float] | None = None, sparse: SparseVector | None = None) -> dict[str, Any] | None:
        """A payload with its sealed fields restored, checked against its checksum (and ``dense`` / ``sparse``
        against theirs, when given); None when its key was destroyed or it is hidden. Raises CorruptData."""
        generation = payload.get(GENERATION)
        if generation is not None and generation in hidden:
            return None
        blob = payload.get(SEALED)
        plain = {k: v for k, v in payload.items() if k not in (SEALED, CHECK)}
        if blob is None:  # not sealed; points written before checksums carry none and are not checked
            why = verify(payload[CHECK], plain, dense, sparse) if CHECK in payload else None
            if why:
                raise CorruptData(why)
            return plain
        key = self.keys.get(str(generation))
        if key is None:
            return None
        try:
            raw = base64.b64decode(blob)
            secret = json.loads(AESGCM(key).decrypt(raw[:_NONCE], raw[_NONCE:], point_id.encode()))
        except (InvalidTag, ValueError, TypeError) as exc:  # ValueError: base64, JSON and UTF-8 errors
            raise CorruptData(f"sealed payload does not authenticate ({type(exc).__name__})") from None
        check = secret.pop(CHECK, None)
        if check is not None and (why := verify(check, plain, dense, sparse)):
            raise CorruptData(why)
        plain.update(secret)
        return plain

    def _open_checked(self, point_id: str, payload: dict[str, Any], hidden: tuple[str, ...],
                      dense: Sequence[float] | None = None, sparse: SparseVector | None = None
                      ) -> dict[str, Any] | None:
        try:
            return self.open(point_id, payload, hidden, dense, sparse)
        except CorruptData as exc:
            report(self.quarantine, point_id, str(self.collection), str(exc), payload)
            return None

    def _read_checked(self, ids: Sequence[str], hidden: tuple[str, ...], with_sparse: bool = False
                      ) -> list[StoredPoint]:
        """The points of ``ids`` (with vectors: dense, and sparse ``with_sparse``), each checked; corrupt or
        unreadable ones quarantined."""
        points, unreadable = read_points(self.inner, [i for i in ids if i not in self.quarantine], with_sparse) \
            if self.quarantine is not None else (self.inner.retrieve(ids, True, with_sparse), {})
        for point_id, why in unreadable.items():
            report(self.quarantine, point_id, str(self.collection), why, None)
        out = []
        for point in points:
            payload = self._open_checked(point.id, point.payload, hidden, point.dense, point.sparse)
            if payload is not None:
                out.append(StoredPoint(point.id, payload, point.dense, point.sparse))
        return out

    @staticmethod
    def _visible(filter: Sequence[FieldMatch], hidden: tuple[str, ...]) -> list[FieldMatch]:
        return [*filter, FieldMatch(GENERATION, hidden, exclude=True)] if hidden else list(filter)

    def _payloads(self, with_payload: bool) -> bool:
        """Whether a search asks the engine for payloads: with a quarantine, ``_scored`` reads them together
        with the vectors instead (both are checked)."""
        return with_payload and self.quarantine is None

    def _scored(self, hits: list[ScoredPoint], hidden: tuple[str, ...], with_payload: bool = True) -> list[
        ScoredPoint
    ]:
        if self.quarantine is not None:
            hits = [h for h in hits if h.id not in self.quarantine]
            if with_payload:
                found = {p.id: p.payload for p in self._read_checked([h.id for h in hits], hidden)}
                return self._committed_only([ScoredPoint(h.id, h.score, found[h.id]) for h in hits if h.id in found])
        out = []
        for hit in hits:
            payload = self._open_checked(hit.id, hit.payload, hidden) if hit.payload else hit.payload
            if payload is not None:
                out.append(ScoredPoint(hit.id, hit.score, payload))
        return self._committed_only(out)

    def _stored(self, points: list[StoredPoint], hidden: tuple[str, ...]) -> list[StoredPoint]:
        out = []
        for point in points:
            if self.quarantine is not None and point.id in self.quarantine:
                continue
            payload = self._open_checked(point.id, point.payload, hidden, point.dense, point.sparse)
            if payload is not None:
                out.append(StoredPoint(point.id, payload, point.dense, point.sparse))
        return self._committed_only(out)

    def _committed_only(self, points: list[_P]) -> list[_P]:
        """With ``committed`` set: only points of their document's committed generation (one lookup per tenant)."""
        if self.committed is None or not points or not all(p.payload for p in points):
            return points
        wanted: dict[str, set[str]] = {}
        for p in points:
            wanted.setdefault(str(p.payload.get("tenant_id", "")), set()).add(str(p.payload.get("document_id", "")))
        current = {(tenant, doc): gen for tenant, docs in wanted.items()
                   for doc, gen in self.committed(tenant, docs).items()}
        return [p for p in points if current.get((str(p.payload.get("tenant_id", "")),
                                                   str(p.payload.get("document_id", "")))) ==
                str(p.payload.get(GENERATION, ""))]

    def search_dense(
        self, vector: Sequence[float], filter: Sequence[FieldMatch], limit: int,
        score_threshold: float | None = None, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        with self.generations.reading() as hidden:
            hits = self.inner.search_dense(vector, self._visible(filter, hidden), limit, score_threshold,
                                           with_payload=self._payloads(with_payload))
            return self._scored(hits, hidden, with_payload)

    def search_sparse(
        self, vector: SparseVector, filter: Sequence[FieldMatch], limit: int, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        with self.generations.reading() as hidden:
            hits = self.inner.search_sparse(vector, self._visible(filter, hidden), limit,
                                            with_payload=self._payloads(with_payload))
            return self._scored(hits, hidden, with_payload)

    def search_hybrid(
        self, dense: Sequence[float], sparse: SparseVector, filter: Sequence[FieldMatch], limit: int,
        prefetch_limit: int, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        with self.generations.reading() as hidden:
            hits = self.inner.search_hybrid(dense, sparse, self._visible(filter, hidden), limit, prefetch_limit,
                                            with_payload=self._payloads(with_payload))
            return self._scored(hits, hidden, with_payload)

    def search_convex(
        self, dense: Sequence[float], sparse: SparseVector, filter: Sequence[FieldMatch], limit: int,
        prefetch_limit: int, weights: ConvexWeights, *, with_payload: bool = True,
    ) -> list[ScoredPoint]:
        with self.generations.reading() as hidden:
            hits = self.inner.search_convex(dense, sparse, self._visible(filter, hidden), limit, prefetch_limit,
                                            weights, with_payload=self._payloads(with_payload))
            return self._scored(hits, hidden, with_payload)

    def scroll(
        self, filter: Sequence[FieldMatch], limit: int, offset: str | None = None, with_vectors: bool = False,
        with_sparse: bool = False,
    ) -> tuple[list[StoredPoint], str | None]:
        with self.generations.reading() as hidden:
            checked = with_vectors or self.quarantine is not None  # the vectors are checked too
            visible = self._visible(filter, hidden)
            try:
                points, next_offset = self.inner.scroll(visible, limit, offset, checked, with_sparse)
            except StoreError:
                # A payload the engine cannot decode fails the whole page: list the page's ids without reading
                # payloads, then read them one by one (the bad one is quarantined).
                if self.quarantine is None or with_sparse or not hasattr(self.inner, "ids_page"):
                    raise
                ids, next_offset = self.inner.ids_page(offset, limit, visible)
                points = self._read_checked(ids, hidden)
                return self._without_vectors(self._committed_only(points), with_vectors), next_offset
            return self._without_vectors(self._stored(points, hidden), with_vectors or with_sparse), next_offset

    def retrieve(self, ids: Sequence[str], with_vectors: bool = False, with_sparse: bool = False) -> list[StoredPoint]:
        with self.generations.reading() as hidden:
            if self.quarantine is not None:
                checked = self._read_checked(ids, hidden, with_sparse)
                return self._without_vectors(self._committed_only(checked), with_vectors or with_sparse)
            points = self.inner.retrieve(ids, with_vectors, with_sparse)
            return self._stored(points, hidden)

    @staticmethod
    def _without_vectors(points: list[StoredPoint], keep: bool) -> list[StoredPoint]:
        return points if keep else [StoredPoint(p.id, p.payload) for p in points]

    def count(self, filter: Sequence[FieldMatch]) -> int:
        with self.generations.reading() as hidden:
            return int(self.inner.count(self._visible(filter, hidden)))
