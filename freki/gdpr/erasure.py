"""Erase a data owner's (or one document's) data from the index, the registry, the caches, the feedback and
search logs and the watcher's view."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from freki.engine import FrekiEngine
from freki.ingest.indexing import WriteGuard
from freki.ingest.registry import DocumentRecord
from freki.watch.state import FILE_NAME as STATE_FILE
from freki.watch.state import WatchState, erasure_marks

if TYPE_CHECKING:
    from freki.watch.watcher import Watcher


@dataclass(frozen=True)
class Erasure:
    """What an erasure removed."""

    documents: int
    chunks: int


def erase_owner(engine: FrekiEngine, tenant: str, owner_id: str, *, watcher: Watcher | None = None) -> Erasure:
    """Erase every document of ``owner_id`` in ``tenant`` (see the module docstring for what that covers)."""
    with _paused(watcher):
        records = list(engine.registry.iterate(tenant, owner_id=owner_id))
        # Markers first: a crash after this leaves data to erase again, never erased data to resurrect.
        _keep_out_of_watch(engine, watcher, records)
        documents, chunks = engine.delete_owner(tenant, owner_id, records, marks=erasure_marks(records))
        engine.graph.feedback.forget_documents(tenant, {r.document_id for r in records})
        engine.graph.search_log.forget(tenant, document_ids={r.document_id for r in records}, owner_id=owner_id)
    return Erasure(documents=documents, chunks=chunks)


def erase_document(engine: FrekiEngine, tenant: str, document_id: str, *, watcher: Watcher | None = None,
                   reason: str = "document", purge: bool = True, guard: WriteGuard | None = None) -> int:
    """Erase one document, every chunk of its id whether or not the registry knows it; returns the chunks
    deleted. ``reason`` goes to the erasure log (``retention`` for a retention policy); ``purge=False`` leaves
    the purge of the engine's files to the caller (one for many erasures). Raises NotFound when there was
    nothing of it. ``guard`` judges the record under the document's lock (``FrekiEngine.delete_document``)."""
    with _paused(watcher):
        record = engine.registry.get(tenant, document_id)
        if record is not None:
            _keep_out_of_watch(engine, watcher, [record])
        deleted = engine.delete_document(tenant, document_id, erase=True, reason=reason, purge=purge, guard=guard,
                                         marks=erasure_marks([record]) if record is not None else None)
        engine.graph.feedback.forget_documents(tenant, {document_id})
        engine.graph.search_log.forget(tenant, document_ids={document_id})
        return deleted


def _keep_out_of_watch(engine: FrekiEngine, watcher: Watcher | None, records: list[DocumentRecord]) -> None:
    # Without a running watcher (watching switched off for now) the markers still go to its state file,
    # so turning watching back on later does not re-index the erased files.
    if watcher is not None:
        watcher.forget(records)
    else:
        WatchState(Path(engine.settings.data_dir) / STATE_FILE).mark_erased(erasure_marks(records))


def _paused(watcher: Watcher | None) -> AbstractContextManager[None]:
    return watcher.paused() if watcher is not None else nullcontext()
