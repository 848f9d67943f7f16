"""Freki as a LangChain retriever (the ``langchain`` extra: ``langchain-core``).

Example:
    from odin_client import OdinSettings
    from odin_client.frameworks.langchain import FrekiRetriever

    retriever = FrekiRetriever(settings=OdinSettings(freki_target="127.0.0.1:50051"), top_k=4)
    docs = retriever.invoke("Which port does the admin API listen on?")   # or: await retriever.ainvoke(...)
    docs[0].metadata["document_id"], docs[0].metadata["score"]

``invoke`` uses one blocking Odin client (thread-safe, kept open; ``close()`` it when done). ``ainvoke`` opens
an asyncio Odin client for the call, because gRPC's asyncio channels belong to one event loop and a retriever
may be awaited from several; pass ``async_client`` to reuse one of yours in its loop.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from odin_client.client import AsyncOdinClient, OdinClient
from odin_client.frameworks.passages import SearchOptions, aretrieve, passage_metadata, retrieve
from odin_client.settings import OdinSettings
from odin_client.types.results import Retrieval


def documents(found: Retrieval) -> list[Document]:
    """Retrieved chunks as LangChain Documents (id = chunk id)."""
    return [Document(page_content=s.content, metadata=passage_metadata(s), id=s.chunk_id) for s in found.sources]


class FrekiRetriever(BaseRetriever):
    """Passages from Freki, most relevant first, with document id, chunk id, location and score as metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: OdinSettings = Field(default_factory=OdinSettings, description="Where Freki is, key, tenant, deadlines")
    top_k: int = Field(default=4, ge=1, description="Passages per query")
    mode: str = Field(default="", description='"", "hybrid", "dense" or "sparse" ("" = the server default)')
    filters: dict[str, str | list[str]] | None = Field(default=None, description="Document metadata to match")
    document_ids: list[str] = Field(default_factory=list, description="Search only these documents")
    score_threshold: float | None = Field(default=None, ge=0, le=1, description="Minimum relevance")
    client: OdinClient | None = Field(default=None, exclude=True, description="A blocking client to use")
    async_client: AsyncOdinClient | None = Field(default=None, exclude=True,
                                                 description="An asyncio client to use (in its event loop)")
    _own: OdinClient | None = PrivateAttr(default=None)

    def _options(self) -> SearchOptions:
        return SearchOptions(top_k=self.top_k, mode=self.mode, filters=self.filters,
                             document_ids=list(self.document_ids), score_threshold=self.score_threshold)

    def _blocking(self) -> OdinClient:
        if self.client is not None:
            return self.client
        if self._own is None:
            self._own = OdinClient(self.settings)
        return self._own

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        return documents(retrieve(self._blocking(), query, self._options()))

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> list[Document]:
        if self.async_client is not None:
            return documents(await aretrieve(self.async_client, query, self._options()))
        async with AsyncOdinClient(self.settings) as client:
            return documents(await aretrieve(client, query, self._options()))

    def close(self) -> None:
        """Close the blocking client this retriever opened (not one it was given)."""
        if self._own is not None:
            self._own.close()
            self._own = None
