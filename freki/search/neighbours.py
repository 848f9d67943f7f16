"""Neighbour chunks: the previous and next chunks of each hit's document (seed 004's ``neighbors_prev/next``).

A caller asking for ``neighbours = n`` gets, for each hit in rank order, the hit's chunks ``index - n`` to
``index + n`` of the same document version, in document order. Rules:

* A chunk appears once: a neighbour that is itself a hit stays in its own place (as a hit), and a chunk
  next to two hits follows the better one.
* A neighbour carries the relevance score of the hit it follows and ``neighbour_of`` = that hit's chunk id,
  so the response stays sorted by score and a client can tell context from matches.
* Only the hit's own generation is read (the version the search saw), within the hit's tenant, from the
  collection that held the hit; hidden (uncommitted) generations stay hidden (``SealedStore.scroll``).

Each stored chunk keeps ``overlap_chars``, the length of the text it repeats from the previous chunk, so
neighbours stitch without repetition (``RetrievedDocument.overlap_chars``).
"""

from __future__ import annotations

from collections.abc import Sequence

from freki.search.retrieval import Hit, Hits, SearchLane
from freki.store import FieldMatch, NumericRange


def with_neighbours(hits: Hits, count: int, lanes: Sequence[SearchLane], tenant: str) -> Hits:
    """``hits`` with up to ``count`` previous and next chunks of each hit's document around it (see above)."""
    if count <= 0 or not hits:
        return hits
    by_model = {lane.model: lane for lane in lanes}
    shown = {h.chunk_id for h in hits}
    out = Hits()
    out.below_threshold = hits.below_threshold
    for hit in hits:
        around = _around(hit, count, by_model.get(hit.model, lanes[0]), tenant)
        index = _index(hit)
        for chunk in around:
            if _index(chunk) < index and chunk.chunk_id not in shown:
                shown.add(chunk.chunk_id)
                out.append(chunk)
        out.append(hit)
        for chunk in around:
            if _index(chunk) > index and chunk.chunk_id not in shown:
                shown.add(chunk.chunk_id)
                out.append(chunk)
    return out


def _index(hit: Hit) -> int:
    value = hit.payload.get("chunk_index", 0)
    return value if isinstance(value, int) else 0


def _around(hit: Hit, count: int, lane: SearchLane, tenant: str) -> list[Hit]:
    """The hit's document's chunks within ``count`` of it (itself excluded), in chunk order."""
    index = _index(hit)
    condition = [
        FieldMatch("tenant_id", (tenant,)),
        FieldMatch("document_id", (hit.document_id,)),
        FieldMatch("chunk_index", range=NumericRange(gte=index - count, lte=index + count)),
    ]
    generation = hit.payload.get("generation")
    if isinstance(generation, str) and generation:
        condition.append(FieldMatch("generation", (generation,)))
    points, _ = lane.chunks.scroll(condition, limit=2 * count + 1)
    found = [Hit(p.id, hit.score, p.payload, hit.model, neighbour_of=hit.chunk_id)
             for p in points if p.id != hit.chunk_id]
    return sorted(found, key=_index)
