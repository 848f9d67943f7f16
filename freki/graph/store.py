"""Links and names per tenant in a companion collection ``<store.collection>_links`` of the same store.

Like the document registry (a 1-dimensional placeholder vector), so replicas sharing a Qdrant server see
the same graph and deletes and GDPR erasure use the same calls. Two kinds of point, both tagged with the
tenant, owner, document and *generation* (version) of the document that wrote them:

* ``link``: one per outgoing link: the target as written, its lookup ``key`` (``freki.graph.names``), kind,
  confidence and rule;
* ``node``: one per document version: the ``names`` (keys) the document answers to.

They are written *before* the version's registry record (``freki.ingest.commit``) and readers keep only
points of the committed generation, so a crash at any moment never shows links of an uncommitted, older
or deleted version; the next commit of the document removes the other generations' points. Targets stay
unresolved in storage and are resolved when read: a dangling link resolves once a document with that name
arrives, and stops resolving when it is deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freki.graph.names import document_names, link_key
from freki.ingest.parsing.links import Link
from freki.store import ChunkPoint, CollectionSpec, FieldMatch, StoredPoint, VectorStore, scroll_pages

_NAMESPACE = uuid.UUID("0f6c3d5e-2b8a-4c1e-9d47-6a5b3c2e1f90")
_PLACEHOLDER = [1.0]
_PAGE = 512
# (tenant, document ids) -> committed generation of each document that has a registry record.
Committed = Callable[[str, Iterable[str]], dict[str, str]]


@dataclass(frozen=True)
class StoredLink:
    """One link of a committed document version."""

    source_document_id: str
    target: str  # as written
    key: str
    kind: str
    confidence: float
    rule: str


class LinkStore:
    """Writes a document version's links and names; reads links, backlinks and name resolutions."""

    def __init__(self, store: VectorStore, collection: str, committed: Committed) -> None:
        self.store = store
        self._committed = committed
        store.ensure_collection(CollectionSpec(name=collection, dense_dim=1, embedding_model="document-links",
                                               sparse=False, keyword_indexes=("point", "key", "names")))

    # -- writes (freki.ingest.commit.Companion) ------------------------------------------------------------
    def write(self, tenant: str, document_id: str, owner_id: str, generation: str, source: str,
              metadata: Mapping[str, object], links: Sequence[Link], access_groups: Sequence[str] = ()) -> None:
        """Store a (not yet committed) document version's names and links (with its access groups, so a
        caller's reads skip those of documents hidden from it: ``freki.store.access``)."""
        base = {"tenant_id": tenant, "owner_id": owner_id, "document_id": document_id, "generation": generation,
                "access_groups": sorted(access_groups)}
        ident = f"{tenant}\x1f{document_id}\x1f{generation}"
        points = [ChunkPoint(id=str(uuid.uuid5(_NAMESPACE, f"{ident}\x1fnode")), dense=_PLACEHOLDER, sparse=None,
                             payload={**base, "point": "node",
                                      "names": document_names(document_id, source, metadata)})]
        points.extend(
            ChunkPoint(id=str(uuid.uuid5(_NAMESPACE, f"{ident}\x1f{i}")), dense=_PLACEHOLDER, sparse=None,
                       payload={**base, "point": "link", "target": link.target, "key": link_key(link, source),
                                "kind": link.kind, "confidence": link.confidence, "rule": link.rule})
            for i, link in enumerate(links)
        )
        for start in range(0, len(points), _PAGE):
            self.store.upsert(points[start:start + _PAGE])

    def retire(self, tenant: str, document_id: str, generation: str) -> None:
        """Remove every other version's points of a document (after ``generation`` was committed)."""
        self.store.delete_where([*self._doc(tenant, document_id),
                                 FieldMatch("generation", (generation,), exclude=True)])

    def discard(self, tenant: str, document_id: str, generation: str) -> None:
        """Remove the points of a version that was never committed."""
        self.store.delete_where([*self._doc(tenant, document_id), FieldMatch("generation", (generation,))])

    def delete(self, tenant: str, document_id: str) -> None:
        """Remove every point of a document (it was deleted)."""
        self.store.delete_where(self._doc(tenant, document_id))

    def delete_owner(self, tenant: str, owner_id: str) -> int:
        """Remove every point of a data owner's documents (GDPR erasure)."""
        if not owner_id:
            raise ValueError("owner_id must be non-empty to erase an owner's links")
        return self.store.delete_where([FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))])

    def remove_orphans(self, stale: Callable[[str], bool]) -> int:
        """Start-up pass: delete points of versions no record commits (a crash between writing a version's
        links and its commit) for which ``stale(generation)`` holds; returns how many."""
        removed = 0
        for page in scroll_pages(self.store, [], _PAGE):
            docs: dict[str, set[str]] = {}
            for p in page:
                docs.setdefault(str(p.payload.get("tenant_id")), set()).add(str(p.payload.get("document_id")))
            committed = {tenant: self._committed(tenant, ids) for tenant, ids in docs.items()}
            orphans = [p.id for p in page
                       if committed[str(p.payload.get("tenant_id"))].get(str(p.payload.get("document_id")))
                       != p.payload.get("generation") and stale(str(p.payload.get("generation", "")))]
            if orphans:
                self.store.delete_ids(orphans)
                removed += len(orphans)
        return removed

    # -- reads ---------------------------------------------------------------------------------------------
    def outgoing(self, tenant: str, document_ids: Sequence[str], limit: int) -> dict[str, list[StoredLink]]:
        """The committed links of each document (at most ``limit`` in all)."""
        points = self._points(tenant, [FieldMatch("document_id", tuple(document_ids)),
                                       FieldMatch("point", ("link",))], limit)
        out: dict[str, list[StoredLink]] = {}
        for p in points:
            out.setdefault(str(p.payload["document_id"]), []).append(_link(p.payload))
        return out

    def links_of(self, tenant: str, document_id: str, source: str, limit: int) -> list[Link]:
        """A committed document's links as the parser gave them (to write them again with a copied version)."""
        return [_parsed(link, source) for link in self.outgoing(tenant, [document_id], limit).get(document_id, [])]

    def names(self, tenant: str, document_ids: Sequence[str]) -> dict[str, list[str]]:
        """The name keys of each committed document."""
        points = self._points(tenant, [FieldMatch("document_id", tuple(document_ids)),
                                       FieldMatch("point", ("node",))], 2 * len(document_ids) + 1)
        return {str(p.payload["document_id"]): [str(n) for n in p.payload.get("names", [])] for p in points}

    def resolve(self, tenant: str, keys: Iterable[str], limit: int,
                visible: Sequence[FieldMatch] = ()) -> dict[str, list[str]]:
        """The committed documents (matching ``visible``) answering to each key (several when names collide)."""
        wanted = tuple(dict.fromkeys(keys))
        if not wanted:
            return {}
        found: dict[str, list[str]] = {}
        for p in self._points(tenant, [FieldMatch("point", ("node",)), FieldMatch("names", wanted), *visible],
                              limit):
            for name in p.payload.get("names", []):
                if name in wanted:
                    found.setdefault(str(name), []).append(str(p.payload["document_id"]))
        return found

    def first_owners(self, tenant: str, keys: Iterable[str], limit: int,
                     visible: Sequence[FieldMatch] = ()) -> dict[str, str]:
        """The document (matching ``visible``) each key resolves to (the first when several share it, as
        ``resolve`` reads them)."""
        return {key: docs[0] for key, docs in self.resolve(tenant, keys, limit, visible).items() if docs}

    def linking_to(self, tenant: str, keys: Sequence[str], limit: int, *, not_from: str = "",
                   visible: Sequence[FieldMatch] = ()) -> list[StoredLink]:
        """Committed links (of documents matching ``visible``) whose key is one of ``keys`` (backlinks of the
        documents with those names), except those of document ``not_from``."""
        if not keys:
            return []
        flt = [FieldMatch("point", ("link",)), FieldMatch("key", tuple(keys)), *visible]
        if not_from:
            flt.append(FieldMatch("document_id", (not_from,), exclude=True))
        points = self._points(tenant, flt, limit)
        return [_link(p.payload) for p in points]

    def _points(self, tenant: str, flt: list[FieldMatch], limit: int) -> list[StoredPoint]:
        """Matching points of committed generations, at most ``limit`` of them."""
        found: list[StoredPoint] = []
        offset: str | None = None
        while len(found) < limit:
            page, offset = self.store.scroll([FieldMatch("tenant_id", (tenant,)), *flt],
                                             limit=min(_PAGE, limit - len(found)), offset=offset)
            committed = self._committed(tenant, {str(p.payload["document_id"]) for p in page})
            found.extend(p for p in page
                         if committed.get(str(p.payload["document_id"])) == p.payload.get("generation"))
            if offset is None:
                break
        return found

    @staticmethod
    def _doc(tenant: str, document_id: str) -> list[FieldMatch]:
        return [FieldMatch("tenant_id", (tenant,)), FieldMatch("document_id", (document_id,))]


def _link(payload: dict[str, Any]) -> StoredLink:
    return StoredLink(source_document_id=str(payload["document_id"]), target=str(payload.get("target", "")),
                      key=str(payload.get("key", "")), kind=str(payload.get("kind", "")),
                      confidence=float(payload.get("confidence", 0.0)), rule=str(payload.get("rule", "")))


def _parsed(stored: StoredLink, source: str) -> Link:
    """The parser's link behind a stored one: a name or a path, whichever gives the stored key."""
    as_name = Link(stored.target, stored.kind, stored.confidence, stored.rule, "name")
    as_path = Link(stored.target, stored.kind, stored.confidence, stored.rule, "path")
    return as_name if link_key(as_name, source) == stored.key else as_path
