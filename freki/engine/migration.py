"""``freki migrate``: move an index between the embedded engine and a Qdrant server, vectors and all.

Copies the chunk collection and the document registry of one Freki configuration into the store of another
(``freki.store.migrate``: ids, vectors and payloads unchanged, nothing re-embedded). The source Freki must be
stopped; the target Freki then starts with the same embedding model and key store (``gdpr.keys_path`` or the
``keys`` directory under ``data_dir``) and serves the same documents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from freki.engine.config import store_config
from freki.settings import FrekiSettings
from freki.store import make_store
from freki.store.errors import StoreError
from freki.store.guarded import GuardedStore
from freki.store.migrate import CopyReport, copy_collection, recorded_spec


def collections(settings: FrekiSettings) -> list[str]:
    """The collections one Freki keeps: its chunks, its document registry, its knowledge-graph links."""
    return [settings.store.collection, f"{settings.store.collection}_documents", f"{settings.store.collection}_links"]


def migrate(
    source: FrekiSettings, target: FrekiSettings, *, resume: bool = False, batch: int = 256,
    progress: Callable[[str, int], None] | None = None,
) -> list[CopyReport]:
    """Copy ``source``'s collections into ``target``'s store; one report per collection."""
    if store_config(source) == store_config(target) and source.store.collection == target.store.collection:
        raise StoreError("source and target are the same store and collection; nothing to migrate")
    reports = []
    for source_name, target_name in zip(collections(source), collections(target), strict=True):
        src, dst = make_store(store_config(source)), make_store(store_config(target))
        try:
            assert isinstance(src, GuardedStore) and isinstance(dst, GuardedStore)
            spec = recorded_spec(src, source_name)
            if spec is None and source_name.endswith("_links"):
                continue  # written by a release before the knowledge graph: re-indexing creates it
            if spec is None:
                raise StoreError(f"the source store has no collection {source_name!r}: is this the right config?")
            reports.append(copy_collection(src, dst, spec, target_name=target_name, batch=batch, resume=resume,
                                           progress=functools.partial(progress, source_name) if progress else None))
        finally:
            src.close()
            dst.close()
    return reports
