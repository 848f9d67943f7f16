"""Committing a document version atomically: write the new generation, commit the record, retire the old.

The chunk store and the document registry are two collections (two write-ahead logs), so no single write
covers both. Instead every version of a document is a *generation*:

1. its chunks are written under a new generation id, hidden from readers (``Generations``);
2. the registry record naming that generation is written — the commit point;
3. readers are switched to the new generation and the old one is hidden, in one step;
4. the old generation's chunks are deleted and its key destroyed (its text is shredded).

A crash before 2 leaves chunks of a generation no record names; after 2, chunks of a generation the record
no longer names. Either way the start-up consistency pass (``freki.ingest.repair``) deletes exactly those,
so after a restart the document is wholly the old or wholly the new version. ``fault_point`` marks the
places a crash test kills the process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from freki.ingest.parsing.links import Link
from freki.ingest.registry import DocumentRecord, DocumentRegistry, generation_age_s
from freki.store import ChunkPoint, FieldMatch, VectorStore
from freki.store.keys import KeyStore
from freki.store.sealed import GENERATION, Generations
from wolf_service.faults import fault_point

log = logging.getLogger("freki.indexing")


def document_filter(tenant: str, document_id: str) -> list[FieldMatch]:
    """The store filter selecting one document's chunks."""
    return [FieldMatch("tenant_id", (tenant,)), FieldMatch("document_id", (document_id,))]


class Companion(Protocol):
    """What else a document version writes (its links: ``freki.graph.store.LinkStore``), tagged with its
    generation: written before the commit, the other generations retired after it, discarded with it."""

    def write(self, tenant: str, document_id: str, owner_id: str, generation: str, source: str,
              metadata: Mapping[str, object], links: Sequence[Link], access_groups: Sequence[str] = ()) -> None: ...
    def retire(self, tenant: str, document_id: str, generation: str) -> None: ...
    def discard(self, tenant: str, document_id: str, generation: str) -> None: ...
    def delete(self, tenant: str, document_id: str) -> None: ...


class SourceWriter(Protocol):
    """Where kept sources go (``freki.ingest.sources.SourceStore``); written and retired with the chunks."""

    store: VectorStore

    def delete_generations(self, tenant: str, document_id: str, generations: Sequence[str]) -> None: ...
    def retire(self, tenant: str, document_id: str, keep: str) -> None: ...
    def delete(self, tenant: str, document_id: str) -> None: ...


class Committer:
    """Writes, commits, retires and discards generations of documents."""

    def __init__(self, chunks: VectorStore, registry: DocumentRegistry, generations: Generations,
                 keys: KeyStore, *, shared_grace_s: float | None = None,
                 on_change: Callable[[str], None] | None = None, companion: Companion | None = None,
                 store_of: Callable[[str], VectorStore] | None = None,
                 stores: Sequence[VectorStore] = (), sources: SourceWriter | None = None) -> None:
        """``shared_grace_s``: the collection is shared with other replicas (``store.shared``); a version
        nobody committed is someone else's work in progress until it is this old. ``on_change(tenant)``:
        called once a tenant's visible documents changed (caches drop its results). ``store_of(model)``:
        the collection of an embedding model's chunks (``freki.ingest.lanes``); ``chunks`` for every model
        when not given; ``stores``: every model's collection (deletes cover them all)."""
        self.chunks = chunks
        self.store_of = store_of or (lambda model: chunks)
        self.stores = list(stores) or [chunks]
        self.registry = registry
        self.generations = generations
        self.keys = keys
        self.shared_grace_s = shared_grace_s
        self.on_change = on_change or (lambda tenant: None)
        self.companion = companion
        self.sources = sources

    def commit(self, points: Sequence[ChunkPoint], record: DocumentRecord, previous: DocumentRecord | None,
               *, stage: str, links: Sequence[Link] = (), source: Sequence[ChunkPoint] = ()) -> int:
        """Write ``points`` (all of ``record.generation``), its ``links`` and the ``source`` pieces, commit
        ``record``, retire ``previous``.

        Returns the number of old chunks deleted. If anything fails before the commit, what was written of
        the new generation is removed again and the previous version stays as it was.
        """
        generation = record.generation
        chunks = self.store_of(record.embedding_model)
        self.generations.hide(generation)
        try:
            if self.companion is not None:
                self.companion.write(record.tenant_id, record.document_id, record.owner_id, generation,
                                     record.source, record.metadata, links, record.access_groups)
            chunks.apply(upserts=points, delete_ids=[], payload_updates=[])
            fault_point(f"{stage}.chunks_written")
            if source and self.sources is not None:
                self.sources.store.upsert(source)
            self.registry.put(record)
        except BaseException:
            self.generations.show(generation)
            try:
                self.discard(record.tenant_id, record.document_id, generation, record.embedding_model)
            except Exception:  # the store is failing: the consistency pass removes the rest at the next start
                log.exception("could not remove uncommitted generation %s of %r", generation, record.document_id)
            raise
        fault_point(f"{stage}.committed")
        old = previous.generation if previous is not None else ""
        if old:
            self.generations.swap(shown=generation, hidden=old)
        else:
            self.generations.show(generation)
        self.on_change(record.tenant_id)
        try:
            deleted = self._retire_elsewhere(record, previous, stage)
            if self.shared_grace_s is None:  # this process alone writes the document (its lock is held)
                deleted += chunks.delete_where([
                    *document_filter(record.tenant_id, record.document_id),
                    FieldMatch(GENERATION, (generation,), exclude=True),
                ])
                fault_point(f"{stage}.old_deleted")
                if self.sources is not None:
                    self.sources.retire(record.tenant_id, record.document_id, generation)
                if old:
                    self.keys.destroy([old])
                if self.companion is not None:
                    self.companion.retire(record.tenant_id, record.document_id, generation)
            else:
                deleted += self._retire_shared(chunks, record, old, stage)
        finally:
            if old:
                self.generations.show(old)
        return deleted

    def _retire_elsewhere(self, record: DocumentRecord, previous: DocumentRecord | None, stage: str) -> int:
        """Delete the previous version when it lives in another model's collection (the document moved)."""
        if previous is None or not previous.generation:
            return 0
        elsewhere = self.store_of(previous.embedding_model)
        if elsewhere is self.store_of(record.embedding_model):
            return 0
        deleted = elsewhere.delete_where([*document_filter(record.tenant_id, record.document_id),
                                          FieldMatch(GENERATION, (previous.generation,))])
        fault_point(f"{stage}.moved_deleted")
        return deleted

    def _retire_shared(self, chunks: VectorStore, record: DocumentRecord, old: str, stage: str) -> int:
        """Retire versions on a shared collection, where another replica may be writing the same document.

        Removes the version replaced and stale uncommitted ones, never a young one (another replica's work
        in progress). Then, if another replica committed meanwhile, this version lost: it is removed too.
        The last committed record wins and its document is whole.
        """
        assert self.shared_grace_s is not None
        doc = document_filter(record.tenant_id, record.document_id)
        present = chunks.value_counts(GENERATION, doc)
        stale = tuple(g for g in present if g != record.generation
                      and (g == old or generation_age_s(g) > self.shared_grace_s))
        deleted = chunks.delete_where([*doc, FieldMatch(GENERATION, stale)]) if stale else 0
        if self.sources is not None:
            self.sources.delete_generations(record.tenant_id, record.document_id, stale)
        fault_point(f"{stage}.old_deleted")
        if stale or old:
            self.keys.destroy(list({*stale, *([old] if old else [])}))
        for gone in {*stale, *([old] if old else [])}:  # never another replica's young version's links
            if self.companion is not None:
                self.companion.discard(record.tenant_id, record.document_id, gone)
        now = self.registry.get(record.tenant_id, record.document_id)
        if now is None or now.generation != record.generation:
            log.info("document %r of tenant %r was committed by another replica meanwhile; this version "
                     "is discarded", record.document_id[:200], record.tenant_id)
            self.discard(record.tenant_id, record.document_id, record.generation, record.embedding_model)
        return deleted

    def discard(self, tenant: str, document_id: str, generation: str, model: str = "") -> None:
        """Remove a generation that was never committed (its chunks, in ``model``'s collection, source and key)."""
        self.store_of(model).delete_where([*document_filter(tenant, document_id),
                                           FieldMatch(GENERATION, (generation,))])
        if self.sources is not None:
            self.sources.delete_generations(tenant, document_id, [generation])
        self.keys.destroy([generation])
        if self.companion is not None:
            self.companion.discard(tenant, document_id, generation)

    def delete(self, tenant: str, document_id: str) -> int:
        """Delete every chunk of a document, its record and its keys — whether or not the registry knows it.

        Returns the chunks deleted. Hidden first, so no reader sees it half deleted.
        """
        record = self.registry.get(tenant, document_id)
        generation = record.generation if record is not None else ""
        if generation:
            self.generations.hide(generation)
        try:
            self.registry.delete(tenant, document_id)
            fault_point("delete.record_deleted")
            deleted = sum(store.delete_where(document_filter(tenant, document_id)) for store in self.stores)
            fault_point("delete.chunks_deleted")
            if self.companion is not None:
                self.companion.delete(tenant, document_id)
            if self.sources is not None:
                self.sources.delete(tenant, document_id)
            self.keys.destroy_document(tenant, document_id)
        finally:
            if generation:
                self.generations.show(generation)
            self.on_change(tenant)
        return deleted
