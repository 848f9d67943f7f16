"""The knowledge graph's RPCs (ListLinks, RecordFeedback) and its parts of RetrieveContext (explanations):
validation and protobuf conversion."""

from __future__ import annotations

import uuid

from wolf.v1 import common_pb2, freki_pb2

from freki.api.validation import require_document_id, require_request_id
from freki.engine import FrekiEngine
from freki.engine.graph import DocumentLink
from freki.graph.explain import Explanation
from freki.settings import FrekiSettings
from freki.store.access import visible_to
from wolf_service.errors import InvalidArgument

MAX_LINK_PAGE = 1000
RATINGS = range(1, 6)


def list_links(engine: FrekiEngine, tenant: str, request: freki_pb2.LinkListRequest,
               groups: frozenset[str] | None = None) -> freki_pb2.LinkListResponse:
    """ListLinks: NOT_FOUND for a document that is not indexed (or hidden from the caller's access ``groups``);
    each list cut at page_size, without hidden documents."""
    doc_id = require_document_id(request.document_id)
    if request.page_size < 0 or request.page_size > MAX_LINK_PAGE:
        raise InvalidArgument(f"page_size must be between 0 (= 100) and {MAX_LINK_PAGE} (got {request.page_size})")
    engine.get_document(tenant, doc_id, groups)
    limit = request.page_size or 100
    outgoing, backlinks = engine.graph.document_links(tenant, doc_id, limit + 1, visible_to(groups))
    return freki_pb2.LinkListResponse(
        request_id=request.request_id, document_id=doc_id,
        outgoing=[graph_edge(link) for link in outgoing[:limit]],
        backlinks=[graph_edge(link) for link in backlinks[:limit]],
        truncated=len(outgoing) > limit or len(backlinks) > limit,
    )


def record_feedback(engine: FrekiEngine, tenant: str, request: freki_pb2.FeedbackRequest,
                    settings: FrekiSettings) -> freki_pb2.FeedbackResponse:
    """RecordFeedback: validates every field (naming the limit) before one line is appended."""
    require_request_id(request.request_id)
    try:
        query_id = str(uuid.UUID(request.query_id))
    except ValueError:
        raise InvalidArgument(
            f"query_id must be the UUID RetrieveContext returned in RAGContext.query_id (got {request.query_id[:80]!r})"
        ) from None
    if request.document_id:
        require_document_id(request.document_id)
    if request.rating not in RATINGS:
        raise InvalidArgument(f"rating must be between {RATINGS[0]} and {RATINGS[-1]} (got {request.rating})")
    limit = settings.graph.feedback_comment_max_chars
    if len(request.comment) > limit:
        raise InvalidArgument(f"comment must be at most {limit:,} characters (graph.feedback_comment_max_chars; "
                              f"got {len(request.comment):,})")
    engine.disk.disk.check_write("record feedback")
    engine.graph.feedback.record(tenant, query_id, request.document_id, request.rating, request.comment,
                                 request_id=request.request_id)
    return freki_pb2.FeedbackResponse(request_id=request.request_id, query_id=query_id, rating=request.rating)


def graph_edge(link: DocumentLink) -> common_pb2.GraphEdge:
    """A link as the GraphEdge clients see."""
    return common_pb2.GraphEdge(source_document_id=link.source_document_id,
                                target_document_id=link.target_document_id, kind=link.kind,
                                confidence=link.confidence, target=link.target, rule=link.rule)


def explanation(value: Explanation) -> common_pb2.Explanation:
    """A hit's Explanation as its protobuf message."""
    return common_pb2.Explanation(
        dense_score=value.dense_score, sparse_score=value.sparse_score, fused_score=value.fused_score,
        graph_bonus=value.graph_bonus, edge_bonus=value.edge_bonus, centrality=value.centrality,
        type_weight=value.type_weight, graph_neighbour=value.neighbour, matched_terms=value.matched_terms,
        edges=[common_pb2.GraphEdge(source_document_id=e.source_document_id,
                                    target_document_id=e.target_document_id, kind=e.kind,
                                    confidence=e.confidence) for e in value.edges],
    )
