"""Renaming a document without re-embedding it.

Chunk ids are ``uuid5(tenant, document id, generation, position)``, so a renamed file's chunks need new
ids. Rather than make ids content-addressed across documents (which would let two documents share a point,
and make erasure of one delete the other's chunk), a rename *moves* the points: each stored chunk is
re-written under the new document id with the same dense vector, as a new generation committed like any
other version (``freki.ingest.commit``), and only then is the old id deleted. A reader sees the document
under one name or the other (for a moment, both), never neither. The sentence vectors cached for chunking
move too. The caller then indexes the file under its new id as usual: every chunk's text is already
stored with its vector, so nothing is embedded and only changed text (if the file was also edited) costs
embeddings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from freki.engine import FrekiEngine
from freki.ingest.registry import chunk_point_id, new_generation
from freki.store import ChunkPoint
from freki.watch.files import META_FILE_SHA, FileSkipped, WatchedFolder, file_sha256, read_file

log = logging.getLogger("freki.watch")


def move_document(engine: FrekiEngine, tenant: str, old_id: str, new_id: str, *, source: str) -> int:
    """Move a document's chunks and record from ``old_id`` to ``new_id``; returns the chunks moved.

    A document already stored under ``new_id`` is replaced (a file renamed over another). Returns 0 and
    changes nothing when ``old_id`` is not indexed. The new record keeps an empty content hash so the
    index call that follows always refreshes it (source, hash, payloads). The new id is committed as a new
    generation before the old id is deleted: a crash in between leaves both, each whole, and the catch-up
    deletes the one whose file is gone.
    """
    if old_id == new_id:
        return 0
    first, second = sorted([old_id, new_id])  # fixed order: two moves in opposite directions cannot deadlock
    with engine.writes.read(), engine.indexer.document_lock(tenant, first), \
            engine.indexer.document_lock(tenant, second):
        record = engine.registry.get(tenant, old_id)
        if record is None:
            return 0
        points = engine.chunks_of(tenant, old_id, with_vectors=True)
        previous = engine.registry.get(tenant, new_id)
        sparse = engine.indexer.sparse_of_points(points)  # cheap
        generation = new_generation()
        upserts: list[ChunkPoint] = []
        for index, (point, sparse_vector) in enumerate(zip(points, sparse, strict=True)):
            if point.dense is None:
                raise RuntimeError(f"chunk {point.id} of {old_id!r} came back without its vector")
            upserts.append(ChunkPoint(
                id=chunk_point_id(tenant, new_id, generation, index),
                dense=point.dense,
                sparse=sparse_vector,
                payload={**point.payload, "document_id": new_id, "source": source, "generation": generation},
            ))
        moved = replace(record, document_id=new_id, source=source, content_hash="", generation=generation)
        # Its knowledge-graph links move along (relative paths now resolved from the new source's folder).
        links = engine.graph.links.links_of(tenant, old_id, record.source,
                                            engine.settings.graph.max_links_per_document)
        engine.indexer.committer.commit(upserts, moved, previous, stage="move", links=links)
        engine.indexer.committer.delete(tenant, old_id)
        engine.indexer.sentence_cache.rename(tenant, old_id, new_id)
        engine.blue_green.touch(tenant, old_id)  # a model migration re-reads both before its switch
        engine.blue_green.touch(tenant, new_id)
    log.info("moved %d chunks of %r to %r without re-embedding", len(upserts), old_id, new_id)
    return len(upserts)


def paired_source(
    engine: FrekiEngine, spec: WatchedFolder, path: Path, vanished: list[Path], *,
    folder_of: Callable[[Path], WatchedFolder | None], max_bytes: int,
) -> Path | None:
    """A vanished path whose indexed bytes equal the new file ``path``'s: a move reported as delete + create.

    The match is removed from ``vanished``. None when ``path`` is already indexed or nothing matches.
    """
    if not vanished or not path.exists() or engine.registry.get(spec.tenant_id, spec.document_id(path)):
        return None
    try:
        sha = file_sha256(read_file(path, max_bytes))
    except (OSError, FileSkipped):
        return None
    for gone in vanished:
        source = folder_of(gone)
        if source is None or source.tenant_id != spec.tenant_id:
            continue
        record = engine.registry.get(spec.tenant_id, source.document_id(gone))
        if record is not None and record.metadata.get(META_FILE_SHA) == sha:
            vanished.remove(gone)
            return gone
    return None
