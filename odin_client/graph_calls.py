"""Knowledge-graph calls of the blocking client: a document's links and backlinks, and feedback on answers.

``retrieve(..., graph_expand=True, explain=True)`` asks for graph expansion and per-hit explanations; the
answer's ``context.query_id`` is what ``record_feedback`` refers to.
"""

from __future__ import annotations

from wolf.v1 import freki_pb2

from odin_client.connection import Connection
from odin_client.messages import new_request_id


class GraphCalls(Connection):
    """ListLinks and RecordFeedback."""

    def list_links(self, document_id: str, *, page_size: int = 0,
                   tenant_id: str | None = None) -> freki_pb2.LinkListResponse:
        """A document's outgoing links (``target_document_id`` empty while dangling) and backlinks."""
        request = freki_pb2.LinkListRequest(request_id=new_request_id(), tenant_id=self._tenant(tenant_id),
                                            document_id=document_id, page_size=page_size)
        resp, _ = self._unary(self._freki().ListLinks, request, service="freki", name="ListLinks",
                              budget_s=self.settings.deadline_s, idempotent_read=True)
        return resp

    def record_feedback(self, query_id: str, rating: int, *, document_id: str = "", comment: str = "",
                        tenant_id: str | None = None) -> freki_pb2.FeedbackResponse:
        """Rate (1-5) a retrieved document, or the answer as a whole, of the answer ``query_id`` names."""
        request = freki_pb2.FeedbackRequest(request_id=new_request_id(), tenant_id=self._tenant(tenant_id),
                                            query_id=query_id, document_id=document_id, rating=rating,
                                            comment=comment)
        resp, _ = self._unary(self._freki().RecordFeedback, request, service="freki", name="RecordFeedback",
                              budget_s=self.settings.deadline_s, idempotent_read=False)
        return resp
