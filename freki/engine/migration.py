"""``freki migrate``: move an index between the embedded engine and a Qdrant server, vectors and all.

Copies the collections of the index that serves one Freki configuration (``index_set.collection_names`` of the
version its active-index record names: chunks, registry, knowledge-graph links, kept sources, each type-specific
model's chunks) into the store of another (``freki.store.migrate``: ids, vectors and payloads unchanged, nothing
re-embedded). The target gets the *same* version's names and, once every copy is done, an active-index record
naming that version, so a source and target sharing one ``data_dir`` (the default of ``--to-url``) agree on it.
Refused while a blue/green model migration is under way (its half-built index would be left behind). The
source Freki must be stopped; the target Freki then starts with the same embedding model(s) and key store
(``gdpr.keys_path`` or ``keys.sqlite`` under ``data_dir``) and serves the same documents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from freki.embed.layout import EmbeddingLayout
from freki.engine.active_index import ActiveIndex, active_index_file, load_active, save_active
from freki.engine.config import store_config
from freki.engine.index_set import collection_names
from freki.settings import FrekiSettings
from freki.store import make_store
from freki.store.errors import StoreError
from freki.store.guarded import GuardedStore
from freki.store.migrate import CopyReport, copy_collection, recorded_spec


def collections(settings: FrekiSettings, version: int = 0) -> list[str]:
    """The collections of index ``version``: chunks, registry, links, kept sources (``index_set``'s naming), then
    each type-specific model's chunks (docs/embedding-models.md). Only the first two must exist."""
    names = collection_names(settings, version)
    layout = EmbeddingLayout.from_routes(settings.embedding_model, settings.embedding_models, names.chunks)
    return [names.chunks, names.registry, names.links, names.sources,
            *(layout.collection_of(model) for model in layout.models[1:])]


def serving_version(settings: FrekiSettings) -> int:
    """The index version that serves ``settings`` (its active-index record); refused mid-migration."""
    active = load_active(active_index_file(settings))
    if active.migration is not None:
        raise StoreError(
            f"a model migration to {active.migration.model_to!r} (index version {active.migration.target}) is under "
            "way in the source: start the source Freki and let it finish (GetIndexStatus shows its progress), "
            "then migrate")
    return active.version


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
    version = serving_version(source)
    target_record = active_index_file(target)
    if target_record != active_index_file(source) and load_active(target_record).migration is not None:
        raise StoreError(f"the target's data_dir has a model migration under way ({target_record}): "
                         "use a fresh data_dir for the target")
    reports: list[CopyReport] = []
    for source_name, target_name in zip(collections(source, version), collections(target, version), strict=True):
        src, dst = make_store(store_config(source)), make_store(store_config(target))
        try:
            assert isinstance(src, GuardedStore) and isinstance(dst, GuardedStore)
            spec = recorded_spec(src, source_name)
            # Links: absent when written by a release before the knowledge graph (re-indexing creates them);
            # sources: absent with reindex.keep_sources off; a type-specific model's collection is made when the
            # model first loads.
            if spec is None and len(reports) >= 2:
                continue
            if spec is None:
                raise StoreError(f"the source store has no collection {source_name!r}: is this the right config?")
            reports.append(copy_collection(src, dst, spec, target_name=target_name, batch=batch, resume=resume,
                                           progress=functools.partial(progress, source_name) if progress else None))
        finally:
            src.close()
            dst.close()
    # Last, so that a target data_dir of its own names the version only once every copy is complete (an
    # interrupted copy is finished with ``resume``, which then writes it).
    save_active(target_record, ActiveIndex(version))
    return reports
