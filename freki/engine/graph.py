"""The engine's knowledge graph (``freki.graph``) built from the ``graph`` settings: the link store the
indexer writes with each document version, expansion and explanation after retrieval, links and
backlinks of a document, the feedback log and the search log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from freki.embed.sparse import SparseEncoder
from freki.graph.expansion import GraphExpander, GraphScore, GraphWeights
from freki.graph.explain import explain
from freki.graph.feedback import FeedbackLog
from freki.graph.search_log import SearchLog
from freki.graph.store import LinkStore, StoredLink
from freki.search.neighbours import with_neighbours
from freki.search.retrieval import Hits, Query, SearchLane
from freki.settings import FrekiSettings
from freki.store import FieldMatch


@dataclass(frozen=True)
class DocumentLink:
    """A link as ListLinks reports it: resolved target ("" while dangling)."""

    source_document_id: str
    target_document_id: str
    target: str
    kind: str
    confidence: float
    rule: str


class EngineGraph:
    """Links, expansion, explanation and feedback for one engine."""

    def __init__(self, settings: FrekiSettings, links: LinkStore, lanes: Sequence[SearchLane],
                 sparse: SparseEncoder) -> None:
        """``lanes``: every embedding model's collection, query embedding and alignment (the retriever's),
        the standard model's first: neighbours and explanations are looked up in the model that holds them."""
        g = settings.graph
        self.links = links
        self.expander = GraphExpander(self.links, lanes, GraphWeights(
            seeds=g.seeds, max_neighbours=g.max_neighbours, semantic=g.semantic_weight, edge=g.edge_weight,
            centrality=g.centrality_weight, type_weights=dict(g.type_weights), kind_weights=dict(g.kind_weights),
            default_kind_weight=g.default_kind_weight, follow_seeds=g.follow_seeds))
        self.feedback = FeedbackLog(Path(settings.data_dir) / "feedback", g.feedback_log_max_bytes)
        self.search_log = SearchLog(Path(settings.data_dir) / "search_log", lambda: settings.search_log)
        self._lanes = lanes
        self._sparse = sparse

    def after_retrieval(self, query: Query, hits: Hits) -> Hits:
        """Expand and/or explain ``hits``, and add their neighbour chunks, as the query asks."""
        graph: dict[str, GraphScore] = {}
        fused = {h.chunk_id: h.score for h in hits}
        if query.graph_expand:
            hits, graph, fused = self.expander.expand(query, hits)
        if query.explain:
            hits = explain(query, hits, self._lanes, self._sparse, fused, graph)
        return with_neighbours(hits, query.neighbours, self._lanes, query.tenant_id)

    def document_links(self, tenant: str, document_id: str, limit: int,
                       visible: Sequence[FieldMatch] = ()) -> tuple[list[DocumentLink], list[DocumentLink]]:
        """A document's outgoing links (resolved where a document has the name) and its backlinks; with
        ``visible`` (``freki.store.access``), a hidden document is neither a resolved target (its name reads as
        dangling) nor the source of a backlink."""
        out = self.outgoing_links(tenant, document_id, limit, visible)
        names = self.links.names(tenant, [document_id]).get(document_id, [])
        owner = self.links.first_owners(tenant, names, 4 * limit, visible)  # a shared name's links count for the first
        mine = [key for key in names if owner.get(key) == document_id]
        back = [_row(link, document_id)
                for link in self.links.linking_to(tenant, mine, limit, not_from=document_id, visible=visible)]
        return out, back

    def outgoing_links(self, tenant: str, document_id: str, limit: int,
                       visible: Sequence[FieldMatch] = ()) -> list[DocumentLink]:
        """A document's outgoing links, each resolved to the document (matching ``visible``) having its target's
        name ("" if none)."""
        outgoing = self.links.outgoing(tenant, [document_id], limit).get(document_id, [])
        resolved = self.links.resolve(tenant, {link.key for link in outgoing}, 4 * limit, visible)
        return [_row(link, (resolved.get(link.key) or [""])[0]) for link in outgoing]


def _row(link: StoredLink, target_document_id: str) -> DocumentLink:
    return DocumentLink(link.source_document_id, target_document_id, link.target, link.kind, link.confidence,
                        link.rule)
