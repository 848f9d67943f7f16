"""``freki migrate``: move an index between the embedded engine and a Qdrant server, vectors and all.

Copies the chunk collection and the document registry of one Freki configuration into the store of another
(``freki.store.migrate``: ids, vectors and payloads unchanged, nothing re-embedded). The source Freki must be
stopped; the target Freki then starts with the same embedding model and key store (``gdpr.keys_path`` or the
``keys`` directory under ``data_dir``) and serves the same documents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from freki.embed.layout import EmbeddingLayout
from freki.engine.config import store_config
from freki.settings import FrekiSettings
from freki.store import make_store
from freki.store.errors import StoreError
from freki.store.guarded import GuardedStore
from freki.store.migrate import CopyReport, copy_collection, recorded_spec


def collections(settings: FrekiSettings) -> list[str]:
    """The collections one Freki keeps: its chunks, its document registry, its knowledge-graph links, then
    each type-specific model's chunks (docs/embedding-models.md; copied when they exist)."""
    layout = EmbeddingLayout.from_routes(settings.embedding_model, settings.embedding_models,
                                         settings.store.collection)
    return [settings.store.collection, f"{settings.store.collection}_documents",
            f"{settings.store.collection}_links", *(layout.collection_of(model) for model in layout.models[1:])]


def migrate(
    source: FrekiSettings, target: FrekiSettings, *, resume: bool = False, batch: int = 256,
    progress: Callable[[str, int], None] | None = None,
) -> list[CopyReport]:
    """Copy ``source``'s collections into ``target``'s store; one report per collection."""
    if store_config(source) == store_config(target) and source.store.collection == target.store.collection:
        raise StoreError("source and target are the same store and collection; nothing to migrate")
    if source.embedding_models != target.embedding_models:
        raise StoreError("source and target must configure the same embedding_models: a migration copies "
                         "vectors, it does not re-embed them")
    reports: list[CopyReport] = []
    for source_name, target_name in zip(collections(source), collections(target), strict=True):
        src, dst = make_store(store_config(source)), make_store(store_config(target))
        try:
            assert isinstance(src, GuardedStore) and isinstance(dst, GuardedStore)
            spec = recorded_spec(src, source_name)
            # Links: absent when written by a release before the knowledge graph (re-indexing creates them);
            # a type-specific model's collection is made when the model first loads.
            if spec is None and len(reports) >= 2:
                continue
            if spec is None:
                raise StoreError(f"the source store has no collection {source_name!r}: is this the right config?")
            reports.append(copy_collection(src, dst, spec, target_name=target_name, batch=batch, resume=resume,
                                           progress=functools.partial(progress, source_name) if progress else None))
        finally:
            src.close()
            dst.close()
    return reports
