"""Reindex settings (a section of ``FrekiSettings``): kept sources and the blue/green model migration."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class ReindexSettings(BaseModel):
    """Kept sources (FullReindex re-chunks from them) and the blue/green model migration (docs/reindex.md)."""

    # Keep each document's source bytes, sealed under its version's key (shredded with it), so FullReindex and a
    # model migration can re-parse and re-chunk. Off: FullReindex re-embeds the stored chunk texts (and says so).
    keep_sources: bool = True
    # Documents larger than this are indexed but their source is not kept (they fall back to re-embedding).
    max_source_bytes: int = Field(16 * 1024 * 1024, ge=1)
    # Seconds the old index stays open after a model migration's switch (requests still using it finish).
    switch_grace_s: float = Field(5.0, ge=0.0, le=600.0)
    # The active-index record (which index version serves; the migration under way). None = <data_dir>/
    # active_index.json. Replicas sharing a collection (store.shared) point it at one file they all read, as
    # they share gdpr.keys_path: after a migration's switch they start on the new version.
    active_index_path: Path | None = None
    # store.shared only: allow this replica to run (and resume) a model migration. A migration cannot see other
    # replicas' writes and drops the old index after its switch, so stop every other replica first; needs
    # active_index_path (docs/reindex.md). Without it, FullReindex migrate_model is refused on a shared store.
    shared_migration: bool = False
