"""The engine's operations on a data owner's documents (GDPR): erase them all, export them."""

from __future__ import annotations

from collections.abc import Iterator

from freki.engine.documents import DocumentOperations
from freki.engine.erasures import Marks, log_owner_erasure
from freki.ingest.registry import DocumentRecord
from freki.store import FieldMatch, StoredPoint
from wolf_service.faults import fault_point


class OwnerDataOperations(DocumentOperations):
    """Erase and export every document of one data owner."""

    def delete_owner(self, tenant: str, owner_id: str, records: list[DocumentRecord], marks: Marks = None) -> tuple[
            int, int]:
        """Erase every document of a data owner; ``records`` are the owner's registry records, listed by
        the caller (which needs them first, see ``freki.gdpr``). Returns (documents, chunks) deleted.

        Waits for index calls in progress; the owner's keys are destroyed (their text is shredded) and,
        with ``gdpr.purge_on_erase``, the engine's files are purged before this returns."""
        self.purger.mark()
        with self.writes.write():
            log_owner_erasure(self.erasures, self.keys, tenant, owner_id, records, marks)
            for record in records:
                self.generations.hide(record.generation)
            try:
                self.registry.delete_owner(tenant, owner_id)
                fault_point("erase.records_deleted")
                owner = [FieldMatch("tenant_id", (tenant,)), FieldMatch("owner_id", (owner_id,))]
                chunks = sum(store.delete_where(owner) for store in self.chunk_stores)
                self.graph.links.delete_owner(tenant, owner_id)
                if self.active.sources is not None:
                    self.active.sources.delete_owner(tenant, owner_id)
                self.blue_green.erase_owner(tenant, owner_id)
                self.keys.destroy_owner(tenant, owner_id)
            finally:
                for record in records:
                    self.generations.show(record.generation)
                self.results.invalidate(tenant)
            for record in records:
                self.indexer.sentence_cache.forget(tenant, record.document_id)
        self.purger.after_erase()
        return len(records), chunks

    def export_owner(self, tenant: str, owner_id: str, *, with_vectors: bool = False,
                     visible: tuple[FieldMatch, ...] = ()) -> Iterator[tuple[DocumentRecord, list[StoredPoint]]]:
        """Each document of a data owner (matching ``visible``) with its chunks, one at a time (bounded memory)."""
        for record in self.registry.iterate(tenant, owner_id=owner_id, visible=visible):
            yield record, self.chunks_of(tenant, record.document_id, with_vectors=with_vectors)
