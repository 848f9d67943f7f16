"""Knowledge-graph calls: a document's links and backlinks, and feedback on answers.

``retrieve(..., graph_expand=True, explain=True)`` asks for graph expansion and per-hit explanations; the
answer's ``context.query_id`` is what ``record_feedback`` refers to.
"""

from __future__ import annotations

from wolf.v1 import freki_pb2

from odin_client.client._async.calls import AsyncCalls
from odin_client.protocol import specs


class AsyncGraphCalls(AsyncCalls):
    """ListLinks and RecordFeedback."""

    async def list_links(self, document_id: str, *, page_size: int = 0,
                         tenant_id: str | None = None) -> freki_pb2.LinkListResponse:
        """A document's outgoing links (``target_document_id`` empty while dangling) and backlinks."""
        return await self._call(specs.list_links(self.settings, document_id, page_size=page_size,
                                                 tenant_id=tenant_id))

    async def record_feedback(self, query_id: str, rating: int, *, document_id: str = "", comment: str = "",
                              tenant_id: str | None = None) -> freki_pb2.FeedbackResponse:
        """Rate (1-5) a retrieved document, or the answer as a whole, of the answer ``query_id`` names (a write:
        not retried after a DEADLINE_EXCEEDED, when it may have been recorded)."""
        return await self._call(specs.record_feedback(self.settings, query_id, rating, document_id=document_id,
                                                      comment=comment, tenant_id=tenant_id))
