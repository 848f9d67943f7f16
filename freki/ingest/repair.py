"""The start-up consistency pass: make the registry and the stored chunks agree again after a crash.

A killed process can leave, by design of the commit protocol (``freki.ingest.commit``), only chunks of a
generation no committed record names (an interrupted write, or an old version not deleted yet) and keys
of such generations. This pass deletes those. It also deletes a document whose committed generation does
not have exactly the chunks its record counts, or whose record can no longer be read (its key is gone):
such a document could only be served partly, so it is removed and the log names it for re-indexing
(a watched folder's catch-up re-indexes its files by itself). Everything repaired is logged and counted
(``freki_repairs_total``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from freki.ingest.commit import document_filter
from freki.ingest.registry import DocumentRecord, DocumentRegistry, generation_age_s
from freki.ingest.sources import SourceStore
from freki.store import FieldMatch, VectorStore, scroll_pages
from freki.store.errors import KeyStoreMismatch
from freki.store.keys import KeyStore
from freki.store.sealed import GENERATION, SEALED

log = logging.getLogger("freki.repair")
_BATCH = 256


@dataclass
class RepairReport:
    """What the pass found and fixed (counts by kind, and the documents removed)."""

    counts: Counter[str] = field(default_factory=Counter)
    removed_documents: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> str:
        if not self.counts:
            return "nothing to repair"
        return ", ".join(f"{kind.replace('_', ' ')}: {n}" for kind, n in sorted(self.counts.items()))


def repair(chunks: VectorStore | Sequence[VectorStore], registry: DocumentRegistry, keys: KeyStore,
           shared_grace_s: float | None = None, drop_unknown_keys: bool = False,
           models: set[str] | None = None, *,
           sources: SourceStore | None = None, sweep_keys: bool = True) -> RepairReport:
    """Run the pass (before the server takes requests); see the module docstring.

    ``chunks``: the chunk collection, or every embedding model's (``freki.embed.layout``). ``models``: the
    models whose collections these are; a document another model embedded (one that did not load) is
    left alone, its chunks are not here to count.

    ``shared_grace_s``: other replicas write the collection (``store.shared``). Then an uncommitted
    generation or key is only removed once older than this (younger ones are another replica's work in
    progress), and a document with missing chunks is reported, not removed (it may be mid-commit elsewhere).
    """
    report = RepairReport()
    _drop_unreadable_records(registry, keys, report, drop_unknown_keys)
    stores = list(chunks) if isinstance(chunks, Sequence) else [chunks]
    committed: dict[str, DocumentRecord] = {r.generation: r for r in registry.everything() if r.generation}
    counts: Counter[str] = Counter()
    for store in stores:
        counts.update(store.value_counts(GENERATION))

    def abandoned(generation: str) -> bool:
        if generation in committed:
            return False
        return shared_grace_s is None or generation_age_s(generation) > shared_grace_s

    orphans = [g for g in counts if abandoned(g)]
    for start in range(0, len(orphans), _BATCH):
        batch = tuple(orphans[start : start + _BATCH])
        for store in stores:
            report.counts["orphan_chunks"] += store.delete_where([FieldMatch(GENERATION, batch)])
    report.counts["orphan_generations"] += len(orphans)
    for generation, record in list(committed.items()):
        if models is not None and record.embedding_model not in models:
            report.counts["documents_of_unloaded_models"] += 1
            continue
        if counts.get(generation, 0) != record.chunk_count and shared_grace_s is not None:
            log.error("document %r of tenant %r has %d of its %d chunks (or is being re-indexed by another "
                      "replica); re-index it if this persists", record.document_id, record.tenant_id,
                      counts.get(generation, 0), record.chunk_count)
            report.counts["incomplete_documents_reported"] += 1
        elif counts.get(generation, 0) != record.chunk_count:
            log.error("document %r of tenant %r has %d of its %d chunks; removed, re-index it",
                      record.document_id, record.tenant_id, counts.get(generation, 0), record.chunk_count)
            registry.delete(record.tenant_id, record.document_id)
            report.counts["incomplete_documents"] += 1
            for store in stores:
                report.counts["orphan_chunks"] += store.delete_where(
                    document_filter(record.tenant_id, record.document_id))
            report.removed_documents.append((record.tenant_id, record.document_id))
            committed.pop(generation)
    if sources is not None and shared_grace_s is None:
        report.counts["orphan_source_pieces"] += sources.remove_orphans(set(committed))
    if not sweep_keys:  # another index (a model migration's) shares the key store: its keys are not orphans
        report.counts = Counter({k: v for k, v in report.counts.items() if v})
        log.info("consistency pass: %s", report.describe())
        return report
    stray = [k for k in keys.ids() if abandoned(k)]
    report.counts["orphan_keys"] += keys.destroy(stray)
    if shared_grace_s is None:  # every record sealed under a destroyed key is gone now (replicas may still erase)
        keys.forget_destroyed()
    report.counts = Counter({k: v for k, v in report.counts.items() if v})
    (log.warning if report.counts else log.info)("consistency pass: %s", report.describe())
    return report


def _drop_unreadable_records(registry: DocumentRegistry, keys: KeyStore, report: RepairReport,
                             drop_unknown: bool = False) -> None:
    """Remove records sealed under a key this key store destroyed (a crash inside an erasure).

    A record sealed under a key the store never held means the key store is the wrong one (``gdpr.keys_path``
    moved, a migrated index started without its keys): refuse to start rather than drop every document.
    """
    raw = getattr(registry.store, "inner", registry.store)
    unreadable: list[tuple[str, str, str]] = []
    for points in scroll_pages(raw, [], 512):
        for point in points:
            payload = point.payload
            if SEALED in payload and keys.get(str(payload.get(GENERATION, ""))) is None:
                unreadable.append((str(payload.get(GENERATION, "")), str(payload.get("tenant_id", "")),
                                   str(payload.get("document_id", ""))))
    erased = keys.destroyed(g for g, _, _ in unreadable)
    unknown = [(t, d) for g, t, d in unreadable if g not in erased]
    if unknown and not drop_unknown:
        tenant, document = unknown[0]
        raise KeyStoreMismatch(
            f"{len(unknown):,} document records are sealed with keys key store {keys.path} never held (e.g. "
            f"{document[:80]!r} of tenant {tenant[:80]!r}): is gdpr.keys_path the key store this index was "
            "written with? Freki does not start rather than drop those documents (gdpr.drop_records_without_keys)"
        )
    for _, tenant, document in unreadable:
        registry.delete(tenant, document)
        report.counts["unreadable_records"] += 1
        report.removed_documents.append((tenant, document))
