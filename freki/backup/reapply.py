"""Re-apply erasures to a restored data dir, so a backup taken before an erasure never brings the data back.

For every entry of the erasure log (``freki.store.erasure_log``): the key ids (document generations) it lists
are destroyed in the restored key store (the backup's copy still held them), every point of those
generations is deleted from every collection (chunks of each model, registry records, kept sources, links)
and the collections are purged (segments vacuumed, write-ahead log rolled over: the plain fields — ids,
metadata, vectors — leave the files too); the feedback lines about the erased documents go, and the watch
state gets the erased files' hashes so the watcher does not index them again. Deleting by generation, not by
owner or document id, keeps what was indexed after the erasure (a new document of the same owner, a
re-indexed id), which no entry names.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from freki.graph.feedback import FeedbackLog
from freki.store import EdgeStore, FieldMatch
from freki.store.edge_layout import CollectionPaths
from freki.store.erasure_log import ErasureEntry, key_ids_of
from freki.store.keys import KeyStore
from freki.store.migrate import recorded_spec
from freki.watch.state import FILE_NAME as STATE_FILE
from freki.watch.state import WatchState

_BATCH = 128


@dataclass(frozen=True)
class Reapplied:
    """What re-applying the erasure log removed from the restored data."""

    entries: int
    keys_destroyed: int
    points_deleted: int
    feedback_lines: int


def collections(store_dir: Path) -> list[str]:
    """The collections in an embedded engine's directory (sub-directories with a ``collection.json``)."""
    if not store_dir.is_dir():
        return []
    return sorted(p.name for p in store_dir.iterdir() if p.is_dir() and CollectionPaths(p).registry.exists())


def reapply(entries: Sequence[ErasureEntry], data_dir: Path, store_dir: Path, keys: KeyStore, *,
            after: str) -> Reapplied:
    """Apply ``entries`` to the restored ``data_dir`` (collections under ``store_dir``) and its key store;
    ``after`` (ISO 8601) is when the backup was taken: the feedback of older entries was erased before it, so
    only newer ones touch feedback."""
    generations = sorted(key_ids_of(entries))
    destroyed = keys.destroy(generations)
    # Collections are purged side by side (each rolls its own write-ahead log over), as the engine does.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="freki-restore-purge") as pool:
        deleted = sum(pool.map(lambda name: _delete_generations(store_dir, name, generations),
                               collections(store_dir) if generations else []))
    feedback = FeedbackLog(data_dir / "feedback", max_bytes=2**62)
    lines = sum(feedback.forget_documents(e.tenant, set(e.document_ids)) for e in entries if e.at >= after)
    WatchState(data_dir / STATE_FILE).mark_erased([tuple(m) for e in entries for m in e.watch_marks])  # type: ignore[misc]
    return Reapplied(len(entries), destroyed, deleted, lines)


def _delete_generations(data_dir: Path, name: str, generations: list[str]) -> int:
    store = EdgeStore(data_dir, flush_writes=True)
    try:
        spec = recorded_spec(store, name)
        assert spec is not None  # collections() lists only directories with a collection.json
        store.ensure_collection(spec)
        deleted = sum(store.delete_where([FieldMatch("generation", tuple(generations[i:i + _BATCH]))])
                      for i in range(0, len(generations), _BATCH))
        if deleted:
            store.purge()
        return deleted
    finally:
        store.close()
