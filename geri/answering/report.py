"""What an answer reports besides its text: the context's documents, the retrieval behind it, the fallbacks.

- Sources per document: the context holds chunks; a reader wants documents. Chunks are grouped by
  ``document_id`` (best relevance, mean relevance, chunk count), flagged when one of them was shown to the
  model and when the answer cites one, best first.
- Retrieval metadata: from the RAGContext Freki returned (its queries, re-ranking, index epoch) and the
  caller's ``AnswerRequest.queries_used`` when it knows the queries better (a rewrite, variants).
- Fallbacks: every degradation that ran, typed (``FallbackKind``), so a caller can tell a first-choice
  answer from one that needed the next backend, a repair, the extractive rule, a revision, the window
  fitting or an abstention.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from wolf.v1 import common_pb2, geri_pb2

from wolf_service.errors import InvalidArgument

_TITLE_KEYS = ("title", "Title")


@dataclass
class _Group:
    first: common_pb2.RetrievedDocument
    scores: list[float] = field(default_factory=list)


def _title(doc: common_pb2.RetrievedDocument) -> str:
    for key in _TITLE_KEYS:
        if doc.metadata.get(key, "").strip():
            return doc.metadata[key].strip()
    return doc.source or doc.document_id


def source_documents(context: common_pb2.RAGContext, shown: Iterable[str],
                     answer: geri_pb2.GroundedAnswer) -> list[geri_pb2.SourceDocument]:
    """The context's chunks grouped per document, best first; ``shown``: ids of documents numbered for the model."""
    groups: dict[str, _Group] = {}
    for doc in context.documents:
        groups.setdefault(doc.document_id, _Group(doc)).scores.append(doc.relevance_score)
    shown_ids = set(shown)
    cited = {c.document_id for c in answer.citations}
    out = [geri_pb2.SourceDocument(
        document_id=doc_id, source=g.first.source, title=_title(g.first), best_relevance=max(g.scores),
        mean_relevance=sum(g.scores) / len(g.scores), chunk_count=len(g.scores), shown=doc_id in shown_ids,
        cited=doc_id in cited) for doc_id, g in groups.items()]
    return sorted(out, key=lambda d: -d.best_relevance)


def check_queries(request: geri_pb2.AnswerRequest, *, max_queries: int, max_chars: int) -> None:
    """Refuse ``queries_used`` beyond ``max_queries`` entries (setting ``answering.max_queries_used``) or an
    entry longer than ``max_chars`` (a question's limit). The context's own ``queries`` are Freki's, bounded
    by its limits, and reported as they are."""
    queries = request.queries_used
    if len(queries) > max_queries:
        raise InvalidArgument(f"queries_used has {len(queries)} entries; the limit is {max_queries} "
                              "(setting answering.max_queries_used)")
    for i, query in enumerate(queries):
        if len(query) > max_chars:
            raise InvalidArgument(f"queries_used[{i}] is {len(query):,} characters; the limit is {max_chars:,}")


def retrieval_metadata(request: geri_pb2.AnswerRequest) -> geri_pb2.RetrievalMetadata:
    """What the retrieval behind ``request.request.context`` found and did."""
    context = request.request.context
    docs = context.documents
    given = request.queries_used or context.queries or [request.request.prompt]
    queries = [q for q in dict.fromkeys(q.strip() for q in given) if q]
    return geri_pb2.RetrievalMetadata(
        documents_found=len({d.document_id for d in docs}), chunks_found=len(docs), queries_used=queries,
        average_relevance=sum(d.relevance_score for d in docs) / len(docs) if docs else 0.0,
        reranking_applied=context.reranked, index_epoch=context.index_epoch)


def fallbacks(*, backends: Sequence[tuple[str, str]] = (), llm: common_pb2.LLMResponse | None = None,
              metadata: common_pb2.ResponseMetadata | None = None,
              answer: geri_pb2.GroundedAnswer) -> list[geri_pb2.Fallback]:
    """The fallbacks that ran, in order: backends skipped, a repair, the window fitting, the extractive rule,
    a revision of streamed text, an abstention."""
    out = [geri_pb2.Fallback(kind=geri_pb2.FALLBACK_KIND_BACKEND, backend=label, detail=why)
           for label, why in backends]
    if llm is not None and llm.repair_attempts:
        out.append(geri_pb2.Fallback(kind=geri_pb2.FALLBACK_KIND_REPAIR, detail=(
            f"the reply broke the answer schema; {llm.repair_attempts} repair attempt(s)")))
    if metadata is not None and metadata.dropped_document_ids:
        out.append(geri_pb2.Fallback(kind=geri_pb2.FALLBACK_KIND_WINDOW, detail=(
            f"{len(metadata.dropped_document_ids)} context document(s) dropped to fit the model's window")))
    if answer.extractive:
        out.append(geri_pb2.Fallback(kind=geri_pb2.FALLBACK_KIND_EXTRACTIVE,
                                     detail="the model's wording was not carried by its citations"))
    if answer.revised:
        out.append(geri_pb2.Fallback(kind=geri_pb2.FALLBACK_KIND_REVISION,
                                     detail="the checked answer replaced the streamed text"))
    if not answer.answered:
        out.append(geri_pb2.Fallback(kind=geri_pb2.FALLBACK_KIND_ABSTENTION, detail=answer.reason))
    return out


def complete(response: geri_pb2.AnswerResponse, request: geri_pb2.AnswerRequest, shown: Iterable[str], *,
             ran: Sequence[geri_pb2.Fallback] | None = None, **fallback_parts: object) -> geri_pb2.AnswerResponse:
    """``response`` with its documents, retrieval metadata and fallbacks filled in (``ran``: the fallbacks
    already known, e.g. those of a cached answer's making; else worked out from ``fallback_parts``)."""
    response.documents.extend(source_documents(request.request.context, shown, response.answer))
    response.retrieval.CopyFrom(retrieval_metadata(request))
    if ran is None:
        ran = fallbacks(answer=response.answer, **fallback_parts)  # type: ignore[arg-type]
    response.fallbacks.extend(ran)
    return response
