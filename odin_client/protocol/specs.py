"""What each call sends and returns, written once for the blocking and the asyncio client.

A :class:`CallSpec` names the RPC, carries the request built from the caller's arguments, the deadline
budget, whether the call is an idempotent read (``DEADLINE_EXCEEDED`` is then retried too, see
:mod:`odin_client.protocol.retry`) and how a response (each message of a server stream) becomes the result,
given the attempts and the time the call took (:class:`Took`). A client only *runs* a spec, so the two cannot
drift apart in what they send, how long they wait, what they retry or what they return.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from wolf.v1 import common_pb2, freki_pb2, geri_pb2, settings_pb2

from odin_client.protocol import messages
from odin_client.protocol.messages import new_request_id
from odin_client.settings import OdinSettings
from odin_client.types.errors import SERVICE_TITLES, StreamInterrupted
from odin_client.types.records import DocumentPage, DocumentRecord, export_record_to_dict, record_from_proto
from odin_client.types.results import Embeddings, Generation, Retrieval, generation_from_proto, retrieval_from_proto
from odin_client.types.status import (
    IndexStatusInfo,
    ModelList,
    ReindexResult,
    models_from_proto,
    reindex_from_proto,
    status_from_proto,
)
from odin_client.types.writes import Erasure, IndexResult, index_result_from_proto

R = TypeVar("R")


@dataclass(frozen=True)
class Took:
    """What a call took so far: attempts started, and milliseconds since it began."""

    attempts: int
    elapsed_ms: float


@dataclass(frozen=True)
class CallSpec(Generic[R]):
    """One call: ``method`` of ``service`` with ``request``; ``convert`` turns the response (each message of
    a server stream; None skips one) into the result. ``last`` marks the message that completes a stream: one
    that ends without it was cut short (:func:`incomplete`)."""

    service: str  # "freki" | "geri"
    method: str  # the RPC, the stub attribute of that name
    request: Any
    budget_s: float
    idempotent_read: bool
    convert: Callable[[Any, Took], R]
    last: Callable[[Any], bool] | None = None
    api: str = ""  # "" = the service's own API (FrekiService, GeriService); "settings" = its SettingsService


def _plain(convert: Callable[[Any], R]) -> Callable[[Any, Took], R]:
    return lambda resp, _took: convert(resp)


def incomplete(spec: CallSpec[Any], received: int) -> StreamInterrupted:
    """The error of a stream that ended after ``received`` messages without the one that completes it."""
    title = SERVICE_TITLES.get(spec.service, spec.service)
    return StreamInterrupted(f"{title} {spec.method} ended after {received} event(s) without its final event; "
                             "the answer is incomplete", service=spec.service,
                             details="stream ended without final event")


def _is_final(event: Any) -> bool:
    return bool(event.WhichOneof("event") == "final")


def deltas_then(final: Callable[[Any, Took], R]) -> Callable[[Any, Took], str | R | None]:
    """Convert a text stream's events: a ``text_delta`` as it is, then the ``final`` event with ``final``."""

    def convert(event: Any, took: Took) -> str | R | None:
        kind = event.WhichOneof("event")
        if kind == "text_delta":
            return str(event.text_delta)
        return final(event.final, took) if kind == "final" else None

    return convert


def retrieve(settings: OdinSettings, query: str, *, tenant_id: str | None, top_k: int,
             filters: messages.Filters | None, mode: str, score_threshold: float | None,
             document_ids: Iterable[str], query_variants: Iterable[str], deadline_s: float | None,
             graph_expand: bool | None, explain: bool, neighbours: int = 0) -> CallSpec[Retrieval]:
    """RetrieveContext: an idempotent read."""
    request = messages.retrieve_request(
        query, tenant_id=tenant_of(settings, tenant_id), top_k=top_k, filters=filters, mode=mode,
        score_threshold=score_threshold, document_ids=list(document_ids), query_variants=list(query_variants),
        graph_expand=graph_expand, explain=explain, neighbours=neighbours)
    return CallSpec("freki", "RetrieveContext", request, deadline_s or settings.deadline_s, True,
                    lambda resp, took: retrieval_from_proto(resp, elapsed_ms=took.elapsed_ms,
                                                            attempts=took.attempts))


def _generation(resp: Any, took: Took) -> Generation:
    return generation_from_proto(resp, elapsed_ms=took.elapsed_ms, attempts=took.attempts)


def generate(settings: OdinSettings, request: common_pb2.WolfRequest, *,
             deadline_s: float | None) -> CallSpec[Generation]:
    """Generate: not an idempotent read (in a session Geri stores the turn), so retried on UNAVAILABLE only."""
    return CallSpec("geri", "Generate", request, deadline_s or settings.generate_deadline_s, False, _generation)


def generate_stream(settings: OdinSettings, request: common_pb2.WolfRequest, *,
                    deadline_s: float | None) -> CallSpec[str | Generation | None]:
    """GenerateStream: text deltas, then one Generation; retried as :func:`generate`, until its first event."""
    return CallSpec("geri", "GenerateStream", request, deadline_s or settings.generate_deadline_s, False,
                    deltas_then(_generation), last=_is_final)


def tenant_of(settings: OdinSettings, tenant_id: str | None) -> str:
    """The call's tenant: ``tenant_id`` when given (even ""), else the configured one."""
    return settings.tenant_id if tenant_id is None else tenant_id


def index_document(settings: OdinSettings, request: freki_pb2.IndexDocumentRequest) -> CallSpec[IndexResult]:
    """IndexDocument (a write: retried only on UNAVAILABLE)."""
    return CallSpec("freki", "IndexDocument", request, settings.index_deadline_s, False,
                    _plain(lambda resp: index_result_from_proto(resp, request.source)))


def list_documents(settings: OdinSettings, *, page_size: int, page_token: str, owner_id: str,
                   tenant_id: str | None) -> CallSpec[DocumentPage]:
    """ListDocuments: one page of the tenant's (or an owner's) documents."""
    request = freki_pb2.ListDocumentsRequest(tenant_id=tenant_of(settings, tenant_id), page_size=page_size,
                                             page_token=page_token, owner_id=owner_id)
    return CallSpec("freki", "ListDocuments", request, settings.deadline_s, True,
                    _plain(lambda resp: DocumentPage([record_from_proto(d) for d in resp.documents],
                                                     resp.next_page_token)))


def get_document(settings: OdinSettings, document_id: str, *, tenant_id: str | None) -> CallSpec[DocumentRecord]:
    """GetDocument: a document's record (NOT_FOUND when there is none)."""
    request = freki_pb2.GetDocumentRequest(tenant_id=tenant_of(settings, tenant_id), document_id=document_id)
    return CallSpec("freki", "GetDocument", request, settings.deadline_s, True, _plain(record_from_proto))


def delete_document(settings: OdinSettings, document_id: str, *, tenant_id: str | None) -> CallSpec[int]:
    """DeleteDocument: the number of chunks deleted."""
    request = freki_pb2.DeleteDocumentRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                              document_id=document_id)
    return CallSpec("freki", "DeleteDocument", request, settings.index_deadline_s, False,
                    _plain(lambda resp: int(resp.chunks_deleted)))


def full_reindex(settings: OdinSettings, *, document_id: str, migrate_model: bool,
                 tenant_id: str | None) -> CallSpec[ReindexResult]:
    """FullReindex: re-chunk from kept sources, or start a model migration."""
    request = freki_pb2.FullReindexRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                           document_id=document_id, migrate_model=migrate_model)
    return CallSpec("freki", "FullReindex", request, settings.index_deadline_s, False, _plain(reindex_from_proto))


def export_owner(settings: OdinSettings, owner_id: str, *, include_vectors: bool,
                 tenant_id: str | None) -> CallSpec[dict[str, Any]]:
    """ExportOwnerData (a server stream, retried until its first record): each record as JSON-ready dict."""
    request = freki_pb2.ExportOwnerDataRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                               owner_id=owner_id, include_vectors=include_vectors)
    return CallSpec("freki", "ExportOwnerData", request, settings.index_deadline_s, True, _plain(export_record_to_dict))


def embed(settings: OdinSettings, texts: Sequence[str], *, tenant_id: str | None) -> CallSpec[Embeddings]:
    """Embed: unit vectors of Freki's model, in order."""
    request = freki_pb2.EmbedRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                     texts=list(texts))
    return CallSpec("freki", "Embed", request, settings.deadline_s, True,
                    _plain(lambda resp: Embeddings([list(e.values) for e in resp.embeddings], resp.model,
                                                   resp.dimension, resp.prompt_tokens)))


def index_status(settings: OdinSettings, *, tenant_id: str | None,
                 deadline_s: float | None) -> CallSpec[IndexStatusInfo]:
    """GetIndexStatus."""
    request = freki_pb2.GetIndexStatusRequest(tenant_id=tenant_of(settings, tenant_id))
    return CallSpec("freki", "GetIndexStatus", request, deadline_s or settings.deadline_s, True,
                    _plain(status_from_proto))


def list_models(settings: OdinSettings, *, deadline_s: float | None) -> CallSpec[ModelList]:
    """ListModels (Geri)."""
    return CallSpec("geri", "ListModels", geri_pb2.ListModelsRequest(), deadline_s or settings.deadline_s, True,
                    _plain(models_from_proto))


def list_links(settings: OdinSettings, document_id: str, *, page_size: int,
               tenant_id: str | None) -> CallSpec[freki_pb2.LinkListResponse]:
    """ListLinks: a document's outgoing links and backlinks (the response as it is)."""
    request = freki_pb2.LinkListRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                        document_id=document_id, page_size=page_size)
    return CallSpec("freki", "ListLinks", request, settings.deadline_s, True, _same)


def record_feedback(settings: OdinSettings, query_id: str, rating: int, *, document_id: str, comment: str,
                    tenant_id: str | None) -> CallSpec[freki_pb2.FeedbackResponse]:
    """RecordFeedback (a write: it appends to the feedback log, so a DEADLINE_EXCEEDED, after which it may have
    arrived, is not retried)."""
    request = freki_pb2.FeedbackRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                        query_id=query_id, document_id=document_id, rating=rating, comment=comment)
    return CallSpec("freki", "RecordFeedback", request, settings.deadline_s, False, _same)


def get_session(settings: OdinSettings, session_id: str, *, tenant_id: str | None) -> CallSpec[geri_pb2.Session]:
    """GetSession (Geri): NOT_FOUND when the conversation does not exist (or expired)."""
    return CallSpec("geri", "GetSession", _session_request(settings, session_id, tenant_id), settings.deadline_s,
                    True, _same)


def rewrite_query(settings: OdinSettings,
                  request: geri_pb2.RewriteQueryRequest) -> CallSpec[geri_pb2.RewriteQueryResponse]:
    """RewriteQuery (Geri): an idempotent read (it stores nothing), so a DEADLINE_EXCEEDED is retried too."""
    return CallSpec("geri", "RewriteQuery", request, settings.generate_deadline_s, True, _same)


def answer(settings: OdinSettings, request: geri_pb2.AnswerRequest, finish: Callable[[Any, Took], R], *,
           deadline_s: float | None = None) -> CallSpec[R]:
    """Answer (Geri): a read, retried on UNAVAILABLE; in a session (where Geri stores the turn) not after a
    DEADLINE_EXCEEDED, as Generate: the first attempt may have stored it. ``finish`` makes the result."""
    return CallSpec("geri", "Answer", request, deadline_s or settings.generate_deadline_s,
                    not request.request.metadata.session_id, finish)


def answer_stream(settings: OdinSettings, request: geri_pb2.AnswerRequest, finish: Callable[[Any, Took], R], *,
                  deadline_s: float | None = None) -> CallSpec[str | R | None]:
    """AnswerStream (Geri): the provisional text deltas, then the final event made a result by ``finish``;
    retried as :func:`answer`, and only until its first event."""
    return CallSpec("geri", "AnswerStream", request, deadline_s or settings.generate_deadline_s,
                    not request.request.metadata.session_id, deltas_then(finish), last=_is_final)


def delete_session(settings: OdinSettings, session_id: str, *, tenant_id: str | None) -> CallSpec[bool]:
    """DeleteSession (Geri): whether the conversation existed."""
    return CallSpec("geri", "DeleteSession", _session_request(settings, session_id, tenant_id), settings.deadline_s,
                    False, _plain(lambda resp: bool(resp.deleted)))


def erase_owner(settings: OdinSettings, owner_id: str, *,
                tenant_id: str | None) -> tuple[CallSpec[tuple[int, int]], CallSpec[int]]:
    """DeleteOwnerData (Freki: documents, chunks) and DeleteOwnerSessions (Geri: sessions), run in this order."""
    tenant = tenant_of(settings, tenant_id)
    documents = CallSpec(
        "freki", "DeleteOwnerData",
        freki_pb2.DeleteOwnerDataRequest(request_id=new_request_id(), tenant_id=tenant, owner_id=owner_id),
        settings.index_deadline_s, False,
        _plain(lambda resp: (int(resp.documents_deleted), int(resp.chunks_deleted))))
    sessions = CallSpec(
        "geri", "DeleteOwnerSessions",
        geri_pb2.DeleteOwnerSessionsRequest(request_id=new_request_id(), tenant_id=tenant, owner_id=owner_id),
        settings.deadline_s, False, _plain(lambda resp: int(resp.sessions_deleted)))
    return documents, sessions


def erasure(documents: tuple[int, int], sessions: int) -> Erasure:
    """The result of :func:`erase_owner`'s two calls."""
    return Erasure(documents=documents[0], chunks=documents[1], sessions=sessions)


def _session_request(settings: OdinSettings, session_id: str, tenant_id: str | None) -> geri_pb2.SessionRequest:
    return geri_pb2.SessionRequest(request_id=new_request_id(), tenant_id=tenant_of(settings, tenant_id),
                                   session_id=session_id)


def _same(resp: Any, _took: Took) -> Any:
    return resp


def get_settings(settings: OdinSettings, service: str) -> CallSpec[settings_pb2.SettingsView]:
    """GetSettings of ``service`` ("freki" or "geri"): its effective settings, secrets redacted (admin key)."""
    request = settings_pb2.GetSettingsRequest(request_id=new_request_id())
    return CallSpec(service, "GetSettings", request, settings.deadline_s, True, _same, api="settings")


def update_settings(settings: OdinSettings, service: str, changes_json: str,
                    dry_run: bool) -> CallSpec[settings_pb2.UpdateSettingsResponse]:
    """UpdateSettings of ``service``: a JSON merge patch, validated as the file is (admin key). A write: not
    retried after a DEADLINE_EXCEEDED, when it may have been applied."""
    request = settings_pb2.UpdateSettingsRequest(request_id=new_request_id(), changes_json=changes_json,
                                                 dry_run=dry_run)
    return CallSpec(service, "UpdateSettings", request, settings.deadline_s, dry_run, _same, api="settings")
