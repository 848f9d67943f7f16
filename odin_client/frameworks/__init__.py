"""Freki as a retriever of the common Python RAG frameworks, each an optional extra imported only when used:

- ``odin_client.frameworks.langchain.FrekiRetriever``: LangChain's ``BaseRetriever`` (``langchain`` extra),
  returning ``Document``s;
- ``odin_client.frameworks.llamaindex.FrekiRetriever``: LlamaIndex's ``BaseRetriever`` (``llamaindex`` extra),
  returning ``NodeWithScore``s.

Both call Odin's ``retrieve`` (blocking for ``invoke`` / ``retrieve``, asyncio for ``ainvoke`` /
``aretrieve``) and carry the same metadata (:func:`odin_client.frameworks.passages.passage_metadata`).
"""
