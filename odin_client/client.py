"""The blocking Odin client: retrieve from Freki, generate with Geri, or ``ask`` (both in turn).

Example:
    with OdinClient(OdinSettings(freki_target="127.0.0.1:50051")) as odin:
        odin.index(["docs/"])
        answer = odin.ask("Which port does the gateway listen on?")
        print(answer.text, [s.document_id for s in answer.sources])

Every call has a deadline (settings, overridable per call) that bounds all of its retries; see
:mod:`odin_client.retry` for what is retried. Errors are :class:`odin_client.errors.OdinError`s.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc, geri_pb2, geri_pb2_grpc

from odin_client import messages
from odin_client.calls import CallRunner
from odin_client.channels import ChannelPool, call_metadata
from odin_client.documents import DocumentFile, discover
from odin_client.errors import DeadlineExceeded, OdinError, ServiceUnavailable, StreamInterrupted
from odin_client.results import (
    Answer,
    Generation,
    IndexResult,
    Retrieval,
    Timings,
    generation_from_proto,
    index_result_from_proto,
    retrieval_from_proto,
)
from odin_client.retry import RETRY_ALWAYS, RETRY_IDEMPOTENT_READ, Clock, RetryPolicy
from odin_client.settings import OdinSettings
from odin_client.status import IndexStatusInfo, ModelList, models_from_proto, status_from_proto

ProgressCallback = Callable[[DocumentFile, IndexResult | OdinError], None]


def policy_from(settings: OdinSettings) -> RetryPolicy:
    """The retry policy described by settings."""
    return RetryPolicy(
        max_attempts=settings.retry_max_attempts,
        initial_backoff=settings.retry_initial_backoff_s,
        max_backoff=settings.retry_max_backoff_s,
        multiplier=settings.retry_multiplier,
        jitter=settings.retry_jitter,
    )


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


class OdinClient:
    """Typed client for Freki and Geri. Thread-safe; close it (or use ``with``) when done."""

    def __init__(
        self,
        settings: OdinSettings | None = None,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """Create a client; no connection is made until the first call.

        Args:
            settings: Targets, deadlines, retry, TLS; defaults to ``OdinSettings()`` (env + file).
            clock: Time source/sleeper for retries (tests inject a fake).
            rng: Random source for backoff jitter.
        """
        self.settings = settings or OdinSettings()
        self.channels = ChannelPool(self.settings)
        self.runner = CallRunner(
            policy_from(self.settings), attempt_timeout_s=self.settings.attempt_timeout_s,
            clock=clock, rng=rng,
        )
        self._metadata = call_metadata(self.settings)

    def __enter__(self) -> OdinClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close all channels. Further calls raise :class:`~odin_client.errors.ClientClosed`."""
        self.channels.close()

    def _freki(self) -> freki_pb2_grpc.FrekiServiceStub:
        return freki_pb2_grpc.FrekiServiceStub(self.channels.get(self.settings.freki_target))

    def _geri(self) -> geri_pb2_grpc.GeriServiceStub:
        return geri_pb2_grpc.GeriServiceStub(self.channels.get(self.settings.geri_target))

    def _tenant(self, tenant_id: str | None) -> str:
        return self.settings.tenant_id if tenant_id is None else tenant_id

    def _unary(self, method: Callable[..., Any], request: Any, *, service: str, name: str,
               budget_s: float, idempotent_read: bool) -> tuple[Any, int]:
        return self.runner.unary(
            lambda timeout: method(request, timeout=timeout, metadata=self._metadata),
            service=service,
            method=name,
            budget_s=budget_s,
            retryable=RETRY_IDEMPOTENT_READ if idempotent_read else RETRY_ALWAYS,
        )

    def retrieve(self, query: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                 mode: str = "", score_threshold: float | None = None, document_ids: Iterable[str] = (),
                 tenant_id: str | None = None, deadline_s: float | None = None) -> Retrieval:
        """Retrieve the chunks most relevant to ``query`` from Freki.

        Args:
            query: The question or search text.
            top_k: Chunks to return; 0 = server default.
            filters: Metadata conditions, ``{key: value or [values]}``.
            mode: "", "dense", "sparse" or "hybrid" ("" = server default).
            score_threshold: Minimum relevance in [0, 1].
            document_ids: Restrict to these documents.
            tenant_id: Overrides the configured tenant.
            deadline_s: Overrides the configured deadline (retries included).
        """
        request = messages.retrieve_request(
            query, tenant_id=self._tenant(tenant_id), top_k=top_k, filters=filters, mode=mode,
            score_threshold=score_threshold, document_ids=list(document_ids),
        )
        start = time.perf_counter()
        resp, attempts = self._unary(self._freki().RetrieveContext, request, service="freki",
                                     name="RetrieveContext", budget_s=deadline_s or self.settings.deadline_s,
                                     idempotent_read=True)
        return retrieval_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    def generate(self, prompt: str, *, context: common_pb2.RAGContext | None = None, model: str = "",
                 system_prompt: str = "", max_tokens: int | None = None, temperature: float | None = None,
                 tenant_id: str | None = None, deadline_s: float | None = None) -> Generation:
        """Generate a complete answer with Geri, grounded in ``context`` when given."""
        request = messages.generate_request(
            prompt, tenant_id=self._tenant(tenant_id), context=context, model=model,
            system_prompt=system_prompt, max_tokens=max_tokens, temperature=temperature,
        )
        start = time.perf_counter()
        resp, attempts = self._unary(self._geri().Generate, request, service="geri", name="Generate",
                                     budget_s=deadline_s or self.settings.generate_deadline_s,
                                     idempotent_read=False)
        return generation_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    def generate_stream(self, prompt: str, *, context: common_pb2.RAGContext | None = None,
                        model: str = "", system_prompt: str = "", max_tokens: int | None = None,
                        temperature: float | None = None, tenant_id: str | None = None,
                        deadline_s: float | None = None) -> Iterator[str | Generation]:
        """Stream an answer from Geri: text deltas (``str``), then exactly one :class:`Generation`.

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        request = messages.generate_request(
            prompt, tenant_id=self._tenant(tenant_id), context=context, model=model,
            system_prompt=system_prompt, max_tokens=max_tokens, temperature=temperature,
        )
        stub = self._geri()
        start = time.perf_counter()
        attempts: list[int] = []
        events = self.runner.stream(
            lambda timeout: stub.GenerateStream(request, timeout=timeout, metadata=self._metadata),
            service="geri", method="GenerateStream",
            budget_s=deadline_s or self.settings.generate_deadline_s, retryable=RETRY_ALWAYS,
            on_attempt=attempts.append,
        )
        received = 0
        try:
            for event in events:
                received += 1
                kind = event.WhichOneof("event")
                if kind == "text_delta":
                    yield event.text_delta
                elif kind == "final":
                    yield generation_from_proto(event.final, elapsed_ms=_ms_since(start),
                                                attempts=len(attempts))
                    return
        finally:
            events.close()  # a consumer that stops early cancels the call now, not at garbage collection
        raise StreamInterrupted(
            f"Geri (generation) GenerateStream ended after {received} event(s) without its final event; "
            "the answer is incomplete", service="geri", details="stream ended without final event",
        )

    def ask(self, question: str, *, top_k: int = 0, filters: messages.Filters | None = None,
            mode: str = "", tenant_id: str | None = None, allow_no_context: bool = False, model: str = "",
            max_tokens: int | None = None, temperature: float | None = None,
            on_text: Callable[[str], None] | None = None) -> Answer:
        """Answer ``question``: retrieve context from Freki, then generate with Geri.

        Args:
            question: The user's question.
            top_k, filters, mode: Retrieval options (see :meth:`retrieve`).
            tenant_id: Overrides the configured tenant for both legs.
            allow_no_context: If Freki is unavailable (after retries), answer without context instead
                of failing; the answer's ``used_context`` is False and ``note`` says why.
            model, max_tokens, temperature: Generation options.
            on_text: When given, the answer is streamed and each text delta passed to it.

        Raises:
            ServiceUnavailable: naming Freki or Geri, when a leg failed after retries.
            OdinError: any other failure.
        """
        start = time.perf_counter()
        context: common_pb2.RAGContext | None = None
        sources = []
        note = ""
        try:
            retrieval = self.retrieve(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id)
            context, sources = retrieval.context, retrieval.sources
        except (ServiceUnavailable, DeadlineExceeded) as exc:
            if not allow_no_context:
                raise
            note = f"Answered WITHOUT retrieved context because retrieval failed: {exc}"
        retrieve_ms = _ms_since(start)
        gen_start = time.perf_counter()
        kwargs: dict[str, Any] = dict(context=context, model=model, max_tokens=max_tokens,
                                      temperature=temperature, tenant_id=tenant_id)
        if on_text is None:
            generation = self.generate(question, **kwargs)
        else:
            generation = self._consume_stream(self.generate_stream(question, **kwargs), on_text)
        timings = Timings(retrieve_ms=retrieve_ms, generate_ms=_ms_since(gen_start),
                          total_ms=_ms_since(start))
        return Answer(question=question, text=generation.text, sources=sources, timings=timings,
                      generation=generation, used_context=bool(sources), note=note)

    @staticmethod
    def _consume_stream(events: Iterator[str | Generation], on_text: Callable[[str], None]) -> Generation:
        for event in events:
            if isinstance(event, Generation):
                return event
            on_text(event)
        raise AssertionError("generate_stream ends with a Generation or raises")  # pragma: no cover

    def index_text(self, text: str, *, source: str, document_id: str = "", content_type: str = "",
                   metadata: Mapping[str, str] | None = None, owner_id: str = "",
                   tenant_id: str | None = None) -> IndexResult:
        """Index one text document (Freki derives the id from ``source`` when ``document_id`` is empty)."""
        request = messages.index_text_request(
            text, tenant_id=self._tenant(tenant_id), source=source, document_id=document_id,
            content_type=content_type, metadata=metadata, owner_id=owner_id,
        )
        return self._index(request)

    def _index(self, request: freki_pb2.IndexDocumentRequest) -> IndexResult:
        resp, _ = self._unary(self._freki().IndexDocument, request, service="freki", name="IndexDocument",
                              budget_s=self.settings.index_deadline_s, idempotent_read=False)
        return index_result_from_proto(resp, request.source)

    def index(self, paths: Iterable[str | os.PathLike[str]], *, metadata: Mapping[str, str] | None = None,
              tenant_id: str | None = None, on_progress: ProgressCallback | None = None,
              stop_on_error: bool = False) -> list[IndexResult | OdinError]:
        """Index files and folders (recursively); see :mod:`odin_client.documents` for formats."""
        docs, _skipped = discover(paths)
        return self.index_documents(docs, metadata=metadata, tenant_id=tenant_id, on_progress=on_progress,
                                    stop_on_error=stop_on_error)

    def index_documents(self, docs: Iterable[DocumentFile], *, metadata: Mapping[str, str] | None = None,
                        tenant_id: str | None = None, on_progress: ProgressCallback | None = None,
                        stop_on_error: bool = False) -> list[IndexResult | OdinError]:
        """Index discovered files one by one.

        A document Freki rejects does not stop the others unless ``stop_on_error``; its error takes
        its place in the result list. An unreachable Freki always stops the run (raises).

        Returns:
            One IndexResult or OdinError per document, in order.
        """
        results: list[IndexResult | OdinError] = []
        for doc in docs:
            outcome: IndexResult | OdinError
            try:
                request = messages.index_file_request(
                    doc, tenant_id=self._tenant(tenant_id), metadata=metadata
                )
                outcome = self._index(request)
            except (ServiceUnavailable, DeadlineExceeded):
                raise
            except OdinError as exc:
                if stop_on_error:
                    raise
                outcome = exc
            results.append(outcome)
            if on_progress is not None:
                on_progress(doc, outcome)
        return results

    def status(self, *, tenant_id: str | None = None, deadline_s: float | None = None) -> IndexStatusInfo:
        """Freki's index status (document and chunk counts, embedding model, store)."""
        request = freki_pb2.GetIndexStatusRequest(tenant_id=self._tenant(tenant_id))
        resp, _ = self._unary(self._freki().GetIndexStatus, request, service="freki", name="GetIndexStatus",
                              budget_s=deadline_s or self.settings.deadline_s, idempotent_read=True)
        return status_from_proto(resp)

    def models(self, *, deadline_s: float | None = None) -> ModelList:
        """Models Geri can serve, and its default."""
        resp, _ = self._unary(self._geri().ListModels, geri_pb2.ListModelsRequest(), service="geri",
                              name="ListModels", budget_s=deadline_s or self.settings.deadline_s,
                              idempotent_read=True)
        return models_from_proto(resp)
