"""The engine's operations on one document: index, search, read, delete, re-index."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from freki.embed.remote_client import caller_deadline
from freki.engine.erasures import Marks, log_document_erasure
from freki.engine.reindex import ReindexReport, full_reindex
from freki.engine.state import EngineState
from freki.ingest.deadline import NO_DEADLINE, Deadline
from freki.ingest.indexing import IndexInput, IndexResult, WriteGuard, document_chunks
from freki.ingest.registry import DocumentRecord
from freki.search.result_cache import hit_bytes
from freki.search.retrieval import Hits, Query
from freki.store import StoredPoint, VectorStore
from wolf_service.errors import FailedPrecondition, NotFound


class DocumentOperations(EngineState):
    """Index, retrieve, get, delete and re-index documents of the serving index."""

    def index(self, doc: IndexInput, deadline: Deadline = NO_DEADLINE, *,
              expect_generation: str | None = None, guard: WriteGuard | None = None) -> IndexResult:
        """Index or re-index one document; stops (writing nothing) when ``deadline`` passes or Freki stops.
        ``guard`` judges the committed version under the document's lock (``IndexingPipeline.index``)."""
        deadline = deadline.with_stop(self._stopping, "the server is shutting down")
        self.disk.disk.check_write(f"index document {doc.document_id[:200]!r}")  # before any parsing or embedding
        with self.writes.read(), caller_deadline(deadline.remaining()):  # bounds a server model's requests
            try:
                result = self.indexer.index(doc, deadline, expect_generation=expect_generation, guard=guard)
            finally:  # after the write (a migration re-reads it before its switch), even a failed one
                self.blue_green.touch(doc.tenant_id, doc.document_id)
        if result.outcome == "updated":
            self.maintenance.touch()
        return result

    def retrieve(self, query: Query) -> Hits:
        """Search within the query's tenant (answered from the result cache when it can be)."""
        def search() -> Hits:
            with self.serving.read():
                index = self.active
                return index.graph.after_retrieval(query, index.retriever.retrieve(query))

        # Keyed by index version: after a migration's switch, no result of the old index is served.
        return self.results.lookup(query.tenant_id, f"v{self.active.version} {query!r}", search,
                                   lambda hit: hit_bytes(hit.payload))

    def get_document(self, tenant: str, document_id: str, groups: frozenset[str] | None = None) -> DocumentRecord:
        """A document's record, or NotFound (also when hidden from the caller's access ``groups``)."""
        record = self.registry.get(tenant, document_id)
        if record is None or not record.readable_by(groups):
            raise NotFound(f"document {document_id!r} is not indexed for tenant {tenant!r}")
        return record

    def delete_document(self, tenant: str, document_id: str, *, erase: bool = False, reason: str = "document",
                        marks: Marks = None, purge: bool = True, guard: WriteGuard | None = None) -> int:
        """Delete every chunk of a document (whether or not the registry knows it), its record, keys and
        cached vectors; returns chunks deleted. ``erase``: in the erasure log first (``reason``, watch ``marks``),
        files purged before returning (``gdpr.purge_on_erase``; ``purge=False``: the caller runs one ``purge``
        for several, the pending marker covers a crash meanwhile). NotFound when there was nothing at all.
        ``guard`` judges the record under the document's lock and raises to refuse (nothing is deleted)."""
        with self.writes.read(), self.indexer.document_lock(tenant, document_id):
            known = (record := self.registry.get(tenant, document_id)) is not None
            if guard is not None:
                guard(record)
            if erase:
                self.purger.mark()
                log_document_erasure(self.erasures, self.keys, tenant, document_id, record, reason, marks)
            try:
                deleted = self.indexer.committer.delete(tenant, document_id)
            finally:
                self.blue_green.touch(tenant, document_id)
            self.indexer.sentence_cache.forget(tenant, document_id)
        if not known and not deleted:
            self.purger.marker.unlink(missing_ok=True)
            raise NotFound(f"document {document_id[:200]!r} is not indexed for tenant {tenant!r}")
        self.maintenance.touch()
        if erase and purge:
            self.purger.after_erase()
        return deleted

    def chunks_of(self, tenant: str, document_id: str, *, with_vectors: bool = False) -> list[StoredPoint]:
        """A document's chunks in order (from its embedding model's collection)."""
        record = self.registry.get(tenant, document_id)
        stores = [self.store_of(record.embedding_model)] if record else self.chunk_stores
        return [p for store in stores for p in document_chunks(store, tenant, document_id, with_vectors=with_vectors)]

    def store_of(self, model: str) -> VectorStore:
        """The collection of ``model``'s chunks in the serving index (the standard one for a model not loaded)."""
        return self.active.store_of(model)

    def full_reindex(self, tenant: str, document_id: str = "") -> ReindexReport:
        """Re-chunk each document (one, or all of the tenant) from its kept source with the current settings;
        without a kept source, re-embed its stored chunk texts (see ``freki.engine.reindex``)."""
        if self.blue_green.running:
            raise FailedPrecondition("a model migration is running; FullReindex waits until it has switched")
        if document_id:
            records = [self.get_document(tenant, document_id)]
        else:
            records = list(self.registry.iterate(tenant))
        return full_reindex(self.active, records, lambda doc, gen: self.index(doc, expect_generation=gen),
                            self.results.invalidate, self._hold_document)

    @contextmanager
    def _hold_document(self, tenant: str, document_id: str) -> Iterator[None]:
        """No index, delete or erasure of the document meanwhile (an erasure waits for the shared lock)."""
        with self.writes.read(), self.indexer.document_lock(tenant, document_id):
            yield
