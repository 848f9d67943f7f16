"""The seed's own wire format (package ``wolf.seed``) served beside ``wolf.v1`` by an adapter.

A service written against the seed's ``.proto`` (../shared/seeds/003) sends ``wolf.seed.WolfRequest``,
whose numbers differ from ours: ``RAG = 0 / LLM = 1``, context in field 4 as ``rag_context``,
``double`` temperature and scores, an ``int64`` timestamp. The adapter registers
``wolf.seed.FrekiService/RetrieveContext`` and ``wolf.seed.GeriService/Generate`` with a request
deserializer that turns the seed's bytes into a ``wolf.v1.WolfRequest`` and a response serializer that
turns our ``wolf.v1.WolfResponse`` into the seed's bytes. Everything between — interceptors (API keys
and tenants, rate limits, metrics, audit) and the servicer — sees ``wolf.v1`` messages only, so the two
packages behave alike by construction; the RPC names are ours, so scopes and audit entries apply as is.
Metrics label the seed's calls with their own method (``wolf_service.metrics.metric_method``), so an operator
tells the two apart.

What the seed's messages cannot carry is dropped on the way out (chunk ids and sources go into each
document's ``metadata`` under ``@``-keys, so citations survive); docs/operations.md lists it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
from wolf.seed import services_pb2, wolf_seed_pb2
from wolf.v1 import common_pb2

SEED_PACKAGE = services_pb2.DESCRIPTOR.package
SEED_FREKI_SERVICE = services_pb2.DESCRIPTOR.services_by_name["FrekiService"].full_name
SEED_GERI_SERVICE = services_pb2.DESCRIPTOR.services_by_name["GeriService"].full_name

_TO_OURS = {wolf_seed_pb2.RAG: common_pb2.RAG, wolf_seed_pb2.LLM: common_pb2.LLM}
_TO_SEED = {ours: seed for seed, ours in _TO_OURS.items()}


def request_from_seed(seed: wolf_seed_pb2.WolfRequest) -> common_pb2.WolfRequest:
    """Our request for the seed's: same id, prompt and options; the tenant is left to the API key.

    A model type the seed does not define becomes MODEL_TYPE_UNSPECIFIED, which both services refuse.
    """
    ours = common_pb2.WolfRequest(
        request_id=seed.request_id, prompt=seed.prompt,
        model_type=_TO_OURS.get(seed.model_type, common_pb2.MODEL_TYPE_UNSPECIFIED),
    )
    if seed.HasField("metadata"):
        meta = seed.metadata
        ours.metadata.session_id = meta.session_id
        ours.metadata.language = meta.language
        if meta.HasField("max_tokens"):
            ours.metadata.max_tokens = meta.max_tokens
        if meta.HasField("temperature"):
            ours.metadata.temperature = meta.temperature
    if seed.HasField("rag_context"):
        ours.context.retrieval_score = seed.rag_context.retrieval_score
        for doc in seed.rag_context.documents:
            ours.context.documents.add(document_id=doc.document_id, content=doc.content,
                                       relevance_score=doc.relevance_score, metadata=dict(doc.metadata))
    return ours


def _seed_document(doc: common_pb2.RetrievedDocument) -> wolf_seed_pb2.RetrievedDocument:
    metadata = dict(doc.metadata)
    # System facts under "@" names (as in metadata filters): a caller's own keys never collide with them.
    for key, value in (("@chunk_id", doc.chunk_id), ("@chunk_index", str(doc.chunk_index)),
                       ("@source", doc.source), ("@location", doc.location.label)):
        if value:
            metadata[key] = value
    return wolf_seed_pb2.RetrievedDocument(document_id=doc.document_id, content=doc.content,
                                           relevance_score=doc.relevance_score, metadata=metadata)


def response_to_seed(ours: common_pb2.WolfResponse) -> wolf_seed_pb2.WolfResponse:
    """The seed's response for ours. ``metadata.timestamp`` is Unix time in milliseconds.

    The seed asks for at least one document in a RAG context; when none reached the relevance
    threshold, ``metadata.error`` says so instead of leaving an unexplained empty list.
    """
    seed = wolf_seed_pb2.WolfResponse(request_id=ours.request_id,
                                      model_type=_TO_SEED.get(ours.model_type, wolf_seed_pb2.RAG))
    error = ours.metadata.error
    which = ours.WhichOneof("result")
    if which == "rag_context":
        ctx = ours.rag_context
        seed.rag_context.SetInParent()
        seed.rag_context.retrieval_score = ctx.retrieval_score
        seed.rag_context.documents.extend(_seed_document(doc) for doc in ctx.documents)
        if not ctx.documents and not error:
            error = (f"no document reached the relevance threshold {ctx.score_threshold:.2f} "
                     f"({ctx.below_threshold} below it)" if ctx.below_threshold else "no document matched")
    elif which == "llm_response":
        llm = ours.llm_response
        seed.llm_response.text = llm.text
        seed.llm_response.tokens_used = llm.tokens_used
        seed.llm_response.latency_ms = float(llm.latency_ms)
        if llm.HasField("cost"):
            seed.llm_response.cost = llm.cost
        if llm.HasField("model_used"):
            seed.llm_response.model_used = llm.model_used
    if ours.HasField("metadata") or error:
        seed.metadata.timestamp = ours.metadata.timestamp.ToMilliseconds()
        if error:
            seed.metadata.error = error
    return seed


def _deserialize(data: bytes) -> common_pb2.WolfRequest:
    return request_from_seed(wolf_seed_pb2.WolfRequest.FromString(data))


def _serialize(response: common_pb2.WolfResponse) -> bytes:
    return response_to_seed(response).SerializeToString()


def seed_handler(service: str, method: str, behaviour: Callable[[Any, grpc.ServicerContext], Any]
                 ) -> grpc.GenericRpcHandler:
    """``service/method`` of the seed's package answered by ``behaviour`` (a wolf.v1 servicer method
    taking a ``wolf.v1.WolfRequest`` and returning a ``wolf.v1.WolfResponse``)."""
    handler = grpc.unary_unary_rpc_method_handler(
        behaviour, request_deserializer=_deserialize, response_serializer=_serialize)
    return grpc.method_handlers_generic_handler(service, {method: handler})
