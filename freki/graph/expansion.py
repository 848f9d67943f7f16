"""Graph-expanded retrieval: the top hits' linked documents join as candidates, then everything is re-scored.

The Mindnet formula (seed 004, "Scoring-Formel"), per candidate chunk of document ``d``::

    total = semantic_weight * relevance * type_weight(d) + edge_weight * edge_bonus(d)
            + centrality_weight * centrality(d)

* ``relevance``: the retriever's score of the chunk; a neighbour (a linked document not among the hits) is
  scored by its best chunk's cosine to the query (``fusion.dense_relevance``), within the caller's filters.
  With several embedding models the neighbour is looked for in each model's collection (the standard one
  first, the next only for neighbours not found yet), with that model's query vector and its cosine aligned
  to the standard model's scale (``SearchLane.calibrate``), as the retriever scores it.
* ``type_weight``: ``graph.type_weights`` of the document's frontmatter ``type`` (1 when unset).
* ``edge_bonus``: sum over the links between ``d`` and a seed (one of the top ``graph.seeds`` hits' documents,
  either direction) of confidence x kind weight x the seed's relevance, at most 1: a link from a strong hit
  counts more than one from a weak hit.
* ``centrality``: ``d``'s links within the local subgraph (seeds and neighbours, all inside the caller's
  filters and document scope) over the most any has.

With ``graph.follow_seeds`` (default), a document linked with a seed the retriever ranked above it stays
below that seed (just below its total): the graph may pull a linked passage up to right after the passage
that matched, never above it, so direct look-ups are not lost to the neighbours of the matching passage
(docs/retrieval.md has the Node.js study that showed it).

Without links every bonus is 0 and, with ``semantic_weight`` 1, the ranking and scores are the retriever's.
A hit's ``relevance_score`` is the total clipped to [0, 1] (the order uses the unclipped total).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from freki.graph.store import LinkStore
from freki.search import fusion
from freki.search.retrieval import Hit, Hits, Query, SearchLane, scope_filter
from freki.store import FieldMatch
from freki.store.access import visible_to


@dataclass(frozen=True)
class GraphWeights:
    """The ``graph`` settings expansion uses."""

    seeds: int = 5
    max_neighbours: int = 20
    semantic: float = 1.0
    edge: float = 0.3
    centrality: float = 0.05
    type_weights: Mapping[str, float] = field(default_factory=dict)
    kind_weights: Mapping[str, float] = field(default_factory=dict)
    default_kind_weight: float = 1.0
    follow_seeds: bool = True


@dataclass(frozen=True)
class Edge:
    """A resolved link between two documents."""

    source_document_id: str
    target_document_id: str
    kind: str
    confidence: float


@dataclass
class GraphScore:
    """What the graph added to one document's hits (for ``explain``)."""

    type_weight: float = 1.0
    edge_bonus: float = 0.0
    centrality: float = 0.0
    graph_bonus: float = 0.0
    edges: list[Edge] = field(default_factory=list)
    neighbour: bool = False  # joined through a link, not found by the search


class GraphExpander:
    """Expands and re-scores a retriever's hits over the tenant's links."""

    def __init__(self, links: LinkStore, lanes: Sequence[SearchLane], weights: GraphWeights) -> None:
        """``lanes``: every embedding model's collection and query embedding, the standard model's first."""
        self.links = links
        self._lanes = lanes
        self.weights = weights

    def edges_around(self, tenant: str, seeds: list[str], visible: Sequence[FieldMatch] = ()) -> list[Edge]:
        """Resolved links from and to the seed documents (bounded by ``max_neighbours``), between documents
        matching ``visible`` (``freki.store.access``) only: a hidden document neither resolves a name, nor owns
        one, nor links, so it takes no place within the limits."""
        limit = 20 * self.weights.max_neighbours
        outgoing = [link for links in self.links.outgoing(tenant, seeds, limit).values() for link in links]
        resolved = self.links.resolve(tenant, {link.key for link in outgoing}, limit, visible)
        edges = [Edge(link.source_document_id, target, link.kind, link.confidence)
                 for link in outgoing for target in resolved.get(link.key, [])[:1]]
        names = self.links.names(tenant, seeds)
        # A link to a name several documents share counts for the first of them, as when it is read forwards.
        owner = self.links.first_owners(tenant, {key for keys in names.values() for key in keys}, limit, visible)
        for link in self.links.linking_to(tenant, list(owner), limit, visible=visible):
            if owner[link.key] in names:
                edges.append(Edge(link.source_document_id, owner[link.key], link.kind, link.confidence))
        return [e for e in dict.fromkeys(edges) if e.source_document_id != e.target_document_id]

    def expand(self, query: Query, hits: Hits) -> tuple[Hits, dict[str, GraphScore], dict[str, float]]:
        """Hits re-scored (and neighbours added) by the formula; the graph's part per document; each
        candidate chunk's score before the graph."""
        w = self.weights
        seed_score: dict[str, float] = {}
        for hit in hits:
            if len(seed_score) >= w.seeds and hit.document_id not in seed_score:
                break
            seed_score[hit.document_id] = max(seed_score.get(hit.document_id, 0.0), hit.score)
        edges = self.edges_around(query.tenant_id, list(seed_score), visible_to(query.access_groups)) \
            if seed_score else []
        found = {h.document_id for h in hits}
        bonus: dict[str, float] = {}
        for e in edges:
            for doc, other in ((e.source_document_id, e.target_document_id),
                               (e.target_document_id, e.source_document_id)):
                if other in seed_score:
                    weight = w.kind_weights.get(e.kind, w.default_kind_weight)
                    bonus[doc] = bonus.get(doc, 0.0) + e.confidence * weight * seed_score[other]
        neighbours = self._fill_slots(query, sorted((d for d in bonus if d not in found), key=lambda d: -bonus[d]))
        fresh = {h.document_id for h in neighbours}
        candidates = list(hits) + neighbours
        # From here on the graph is the local subgraph of the candidates (all within the caller's tenant,
        # filters and document scope): a document the caller filtered out never shows in an explanation's
        # edges, nor counts for a centrality.
        inside = {h.document_id for h in candidates}
        edges = [e for e in edges if e.source_document_id in inside and e.target_document_id in inside]
        degree: dict[str, int] = {}
        for e in edges:
            for doc in (e.source_document_id, e.target_document_id):
                degree[doc] = degree.get(doc, 0) + 1
        top = max(degree.values(), default=0)
        scores: dict[str, GraphScore] = {}
        ranked: list[tuple[float, Hit]] = []
        original = {h.document_id: h.score for h in sorted(candidates, key=lambda h: h.score)}
        linked: dict[str, set[str]] = {}
        for e in edges:
            linked.setdefault(e.source_document_id, set()).add(e.target_document_id)
            linked.setdefault(e.target_document_id, set()).add(e.source_document_id)
        best: dict[str, float] = {}  # each document's best total so far
        for hit in sorted(candidates, key=lambda h: -h.score):  # stronger documents are final first
            doc = hit.document_id
            if doc not in scores:
                kind = hit.payload.get("metadata", {}).get("type")
                scores[doc] = GraphScore(
                    type_weight=w.type_weights.get(kind, 1.0) if isinstance(kind, str) else 1.0,
                    edge_bonus=min(1.0, bonus.get(doc, 0.0)),
                    centrality=degree.get(doc, 0) / top if top else 0.0,
                    edges=[e for e in edges if doc in (e.source_document_id, e.target_document_id)],
                    neighbour=doc in fresh)
            g = scores[doc]
            g.graph_bonus = w.edge * g.edge_bonus + w.centrality * g.centrality
            total = w.semantic * hit.score * max(g.type_weight, 0.0) + g.graph_bonus
            stronger = [best[s] for s in linked.get(doc, ()) if s in seed_score and s in best
                        and original.get(s, 0.0) > original[doc]]
            if w.follow_seeds and stronger:
                total = min(total, max(stronger) - 1e-6)  # a linked document follows the hit that brought it
            best[doc] = max(best.get(doc, total), total)
            ranked.append((total, hit))
        ranked.sort(key=lambda pair: -pair[0])
        out = Hits(Hit(h.chunk_id, min(1.0, t), h.payload, h.model, h.explanation) for t, h in ranked
                   if min(1.0, t) >= query.score_threshold)
        out[query.top_k:] = []
        out.below_threshold = hits.below_threshold
        return out, scores, {h.chunk_id: h.score for h in candidates}

    def _fill_slots(self, query: Query, ranked: list[str]) -> list[Hit]:
        """The best chunks of the first ``max_neighbours`` documents of ``ranked`` (by bonus) that are within
        the caller's scope. Slots are filled only after the scope is applied: a document the caller's filters
        or access groups leave out never takes the place of one it may see (which would tell it that the left
        out document is linked there). Searched a slot-full at a time, so without such documents it is one search."""
        slots = self.weights.max_neighbours
        found: list[Hit] = []
        start = 0
        while len(found) < slots and start < len(ranked):
            batch = ranked[start:start + slots - len(found)]
            start += len(batch)
            order = {doc: i for i, doc in enumerate(batch)}
            found.extend(sorted(self._neighbour_hits(query, batch), key=lambda h: order[h.document_id]))
        return found

    def _neighbour_hits(self, query: Query, documents: list[str]) -> list[Hit]:
        """The best chunk of each neighbour document by cosine to the query, within the caller's scope.

        A document lives in one model's collection: each lane is searched for the neighbours no earlier lane
        held, so with one model (or when the standard collection holds them all) this is one search."""
        best: dict[str, Hit] = {}
        for lane in self._lanes:
            missing = [d for d in documents if d not in best]
            if not missing:
                break
            vector = lane.embed_query(query.text, query.tenant_id).tolist()
            flt = [*scope_filter(query), FieldMatch("document_id", tuple(missing))]
            for p in lane.chunks.search_dense(vector, flt, 5 * len(missing), with_payload=True):
                doc = str(p.payload.get("document_id", ""))
                if doc not in best:
                    best[doc] = Hit(p.id, fusion.dense_relevance(lane.calibrate(p.score)), p.payload, lane.model)
        return list(best.values())
