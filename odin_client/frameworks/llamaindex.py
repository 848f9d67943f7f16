"""Freki as a LlamaIndex retriever (the ``llamaindex`` extra: ``llama-index-core``).

Example:
    from llama_index.core.query_engine import RetrieverQueryEngine
    from odin_client import OdinSettings
    from odin_client.frameworks.llamaindex import FrekiRetriever

    retriever = FrekiRetriever(OdinSettings(freki_target="127.0.0.1:50051"), top_k=4)
    nodes = retriever.retrieve("Which port does the admin API listen on?")   # or: await retriever.aretrieve(...)
    nodes[0].score, nodes[0].node.metadata["document_id"]
    engine = RetrieverQueryEngine.from_args(retriever, llm=GeriLLM(settings))   # answers with Geri
``retrieve`` uses one blocking Odin client (thread-safe, kept open; ``close()`` it when done); ``aretrieve``
opens an asyncio client per call (gRPC's asyncio channels belong to one event loop) unless given ``async_client``.
:class:`GeriLLM` lets a LlamaIndex query engine write its answer with Geri (Odin's ``generate``), so the whole
engine runs on the platform's own services.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from pydantic import ConfigDict, Field, PrivateAttr

from odin_client.client import AsyncOdinClient, OdinClient
from odin_client.frameworks.passages import SearchOptions, aretrieve, passage_metadata, retrieve
from odin_client.settings import OdinSettings
from odin_client.types.filters import Filters
from odin_client.types.results import Retrieval

# Kept out of the text the LLM and the embedding see: ids and scores are for the program, not the prompt.
HIDDEN_KEYS = ["document_id", "chunk_id", "chunk_index", "score"]


def nodes(found: Retrieval) -> list[NodeWithScore]:
    """Retrieved chunks as LlamaIndex nodes (id = chunk id), scored by Freki's relevance."""
    out = []
    for s in found.sources:
        node = TextNode(id_=s.chunk_id, text=s.content, metadata=passage_metadata(s),
                        excluded_llm_metadata_keys=HIDDEN_KEYS, excluded_embed_metadata_keys=HIDDEN_KEYS)
        out.append(NodeWithScore(node=node, score=s.score))
    return out


class FrekiRetriever(BaseRetriever):
    """Passages from Freki, most relevant first, with document id, chunk id, location and score as metadata."""

    def __init__(self, settings: OdinSettings | None = None, *, top_k: int = 4, mode: str = "",
                 filters: Filters | None = None, document_ids: list[str] | None = None,
                 score_threshold: float | None = None, client: OdinClient | None = None,
                 async_client: AsyncOdinClient | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1 (got {top_k})")
        self.settings = settings or OdinSettings()
        self.options = SearchOptions(top_k=top_k, mode=mode, filters=filters, document_ids=list(document_ids or []),
                                     score_threshold=score_threshold)
        self._given, self._async_client = client, async_client
        self._own: OdinClient | None = None

    def _blocking(self) -> OdinClient:
        if self._given is not None:
            return self._given
        if self._own is None:
            self._own = OdinClient(self.settings)
        return self._own

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return nodes(retrieve(self._blocking(), query_bundle.query_str, self.options))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._async_client is not None:
            return nodes(await aretrieve(self._async_client, query_bundle.query_str, self.options))
        async with AsyncOdinClient(self.settings) as client:
            return nodes(await aretrieve(client, query_bundle.query_str, self.options))

    def close(self) -> None:
        """Close the blocking client this retriever opened (not one it was given)."""
        if self._own is not None:
            self._own.close()
            self._own = None


class GeriLLM(CustomLLM):
    """Geri as a LlamaIndex LLM: ``complete`` is Odin's ``generate``, ``stream_complete`` its stream."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: OdinSettings = Field(default_factory=OdinSettings, description="Where Geri is, key, deadlines")
    model: str = Field(default="", description="Geri model ('' = the server default)")
    max_tokens: int | None = Field(default=None, ge=1, description="Tokens to generate at most")
    context_window: int = Field(default=8192, ge=256, description="What LlamaIndex may put in one prompt")
    _client: OdinClient | None = PrivateAttr(default=None)

    def __init__(self, settings: OdinSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings=settings or OdinSettings(), **kwargs)

    @property
    def metadata(self) -> LLMMetadata:
        """What LlamaIndex needs to size prompts."""
        return LLMMetadata(context_window=self.context_window, num_output=self.max_tokens or 256,
                           model_name=self.model or "geri")

    def _odin(self) -> OdinClient:
        if self._client is None:
            self._client = OdinClient(self.settings)
        return self._client

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """One whole generation."""
        generation = self._odin().generate(prompt, model=self.model, max_tokens=self.max_tokens)
        return CompletionResponse(text=generation.text, raw={"model": generation.model})

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """The generation as it is written."""
        text = ""
        for event in self._odin().generate_stream(prompt, model=self.model, max_tokens=self.max_tokens):
            if isinstance(event, str):
                text += event
                yield CompletionResponse(text=text, delta=event)

    def close(self) -> None:
        """Close the Odin client."""
        if self._client is not None:
            self._client.close()
            self._client = None
