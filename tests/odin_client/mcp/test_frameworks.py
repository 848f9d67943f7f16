"""The LangChain and LlamaIndex retrievers against the real Freki (packaged model, embedded Qdrant engine): in
a LangChain chain that builds the prompt from the passages, and in a LlamaIndex query engine that answers with
the real Geri (embedded SmolLM2); blocking and asyncio, with our metadata on every passage."""

from __future__ import annotations

import asyncio

import pytest

from odin_client import OdinSettings
from tests.odin_client.mcp.conftest import secret
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration
QUESTION = "Which TCP port does the Hrafn Relay admin API listen on?"


def _settings(freki: ServerHandle, geri: ServerHandle | None = None) -> OdinSettings:
    return OdinSettings(freki_target=freki.address, geri_target=geri.address if geri else "127.0.0.1:1",
                        api_key=secret("acme-ro"))


def test_langchain_retriever_in_a_chain(keyed_freki: ServerHandle) -> None:
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    from odin_client.frameworks.langchain import FrekiRetriever

    retriever = FrekiRetriever(settings=_settings(keyed_freki), top_k=2)

    def context(docs: list[Document]) -> str:
        return "\n\n".join(f"[{d.metadata['document_id']}] {d.page_content}" for d in docs)

    prompt = ChatPromptTemplate.from_template("Answer from the context only.\n\n{context}\n\nQuestion: {question}")
    chain = {"context": retriever | RunnableLambda(context), "question": RunnablePassthrough()} | prompt
    try:
        docs = retriever.invoke(QUESTION)
        adocs = asyncio.run(retriever.ainvoke(QUESTION))
        text = chain.invoke(QUESTION).to_string()
        atext = asyncio.run(chain.ainvoke(QUESTION)).to_string()
        batch = retriever.batch(["liquid helium coolant", "Globex payroll"])
        only = FrekiRetriever(settings=_settings(keyed_freki), document_ids=["specs/coolant.md"],
                              score_threshold=0.0).invoke("port")
    finally:
        retriever.close()
    top = docs[0]
    assert top.metadata["document_id"] == "ops/handbook.md" and top.id == top.metadata["chunk_id"]
    assert top.metadata["title"] == "Hrafn Relay handbook" and top.metadata["section"] == "Admin API"
    assert 0 < top.metadata["score"] <= 1 and "7431" in top.page_content
    assert [(d.id, d.metadata) for d in adocs] == [(d.id, d.metadata) for d in docs]  # async = sync
    assert "[ops/handbook.md]" in text and "7431" in text and QUESTION in text and text == atext
    assert batch[0][0].metadata["document_id"] == "specs/coolant.md"
    assert all(d.metadata["document_id"] != "hr/payroll.md" for d in batch[1])  # the key's tenant only
    assert [d.metadata["document_id"] for d in only] == ["specs/coolant.md"]


def test_llamaindex_retriever_in_a_query_engine_answering_with_geri(keyed_freki: ServerHandle,
                                                                    keyed_geri: ServerHandle) -> None:
    from llama_index.core.query_engine import RetrieverQueryEngine

    from odin_client.frameworks.llamaindex import FrekiRetriever, GeriLLM

    settings = _settings(keyed_freki, keyed_geri)
    retriever = FrekiRetriever(settings, top_k=2)
    llm = GeriLLM(settings, max_tokens=32)
    engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
    try:
        nodes = retriever.retrieve(QUESTION)
        anodes = asyncio.run(retriever.aretrieve(QUESTION))
        answer = engine.query(QUESTION)
        aanswer = asyncio.run(engine.aquery("What is the coolant made of?"))
    finally:
        retriever.close()
        llm.close()
    top = nodes[0]
    assert top.node.metadata["document_id"] == "ops/handbook.md" and top.node.node_id == top.node.metadata["chunk_id"]
    assert top.score == top.node.metadata["score"] and 0 < top.score <= 1
    assert "document_id" not in top.node.get_content(metadata_mode="llm")  # ids stay out of the prompt
    assert "Hrafn Relay handbook" in top.node.get_content(metadata_mode="llm")
    assert [(n.node.node_id, n.score) for n in anodes] == [(n.node.node_id, n.score) for n in nodes]
    assert answer.source_nodes[0].node.metadata["document_id"] == "ops/handbook.md"
    assert str(answer).strip()  # written by SmolLM2 through Geri
    assert aanswer.source_nodes[0].node.metadata["document_id"] == "specs/coolant.md" and str(aanswer).strip()
