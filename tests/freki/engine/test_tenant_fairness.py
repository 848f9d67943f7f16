"""End to end through a real Freki server: tenant A's indexing pass, held inside the model, does not hold
tenant B's query (the query lane, freki.embed.scheduling); A's document is indexed once the pass goes on.
Speed is measured by scripts/bench_tenant_interference.py, not here."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import grpc
import numpy as np
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

pytestmark = pytest.mark.integration


def index(stub: freki_pb2_grpc.FrekiServiceStub, tenant: str, doc: str, text: str) -> freki_pb2.IndexDocumentResponse:
    return stub.IndexDocument(freki_pb2.IndexDocumentRequest(request_id=f"{tenant}-{doc}", tenant_id=tenant,
                                                             document_id=doc, content=text, content_type="text"),
                              timeout=120)


def ask(stub: freki_pb2_grpc.FrekiServiceStub, tenant: str, question: str) -> list[str]:
    answer = stub.RetrieveContext(common_pb2.WolfRequest(
        request_id=f"q-{tenant}", tenant_id=tenant, model_type=common_pb2.RAG, prompt=question,
        retrieval=common_pb2.RetrievalOptions(top_k=3)), timeout=120)
    return [d.document_id for d in answer.rag_context.documents]


def test_a_query_is_answered_while_another_tenants_indexing_pass_is_held(
    freki_server, freki_stub: freki_pb2_grpc.FrekiServiceStub, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    _, engine = freki_server
    model = engine.embedder
    assert model.query_lane, "the default settings run queries on a lane of their own"
    index(freki_stub, "agency-b", "heating", "The flat on the second floor is heated by district heat. "
          "The boiler in the cellar was replaced last spring and the radiators were bled in October.")
    inside, release = threading.Event(), threading.Event()
    real = model._encoder

    class HeldEncoder:
        """The real encoder; the indexing pass waits inside the model until released."""

        name = real.name

        def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
            inside.set()
            release.wait(120)
            return real.encode(texts, batch_size)

    monkeypatch.setattr(model, "_encoder", HeldEncoder())
    outcome: dict[str, object] = {}

    def index_a() -> None:
        try:
            outcome["a"] = index(freki_stub, "agency-a", "lease", "The lease of the shop on the corner ends in "
                                 "March. The tenant must give notice three months before the end of the lease.")
        except grpc.RpcError as exc:
            outcome["a"] = exc

    sender = threading.Thread(target=index_a)
    sender.start()
    try:
        assert inside.wait(120), "tenant A's indexing never reached the model"
        assert ask(freki_stub, "agency-b", "How is the flat heated?")[:1] == ["heating"]
        assert sender.is_alive() and "a" not in outcome  # B was answered while A's pass was held
    finally:
        release.set()
        sender.join(120)
    result = outcome["a"]
    assert isinstance(result, freki_pb2.IndexDocumentResponse), result
    assert ask(freki_stub, "agency-a", "When does the lease end?")[:1] == ["lease"]
    assert "lease" not in ask(freki_stub, "agency-b", "When does the lease end?")
