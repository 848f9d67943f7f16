"""The blocking Odin client: retrieve from Freki, generate with Geri, or ``ask`` (a grounded answer: Freki's
context answered by Geri's Answer RPC).

Example:
    with OdinClient(OdinSettings(freki_target="127.0.0.1:50051")) as odin:
        odin.index(["docs/"])
        answer = odin.ask("Which port does the gateway listen on?")
        print(answer.text, [s.document_id for s in answer.sources])

Every call has a deadline (settings, overridable per call) that bounds all of its retries; see
:mod:`odin_client.protocol.retry` for what is retried. Errors are :class:`odin_client.types.errors.OdinError`s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from wolf.v1 import common_pb2, geri_pb2

from odin_client.asking.free_text import free_text_ask
from odin_client.asking.grounded import AskOptions, Call, Prepared, RetrieveCall, finish, prepare
from odin_client.client._sync.documents import DocumentCalls
from odin_client.client._sync.graph import GraphCalls
from odin_client.protocol import messages
from odin_client.protocol import specs as call_specs
from odin_client.protocol.flows import drive
from odin_client.protocol.retry import RETRY_ALWAYS, retryable
from odin_client.tools import ToolLoopResult, ToolRegistry
from odin_client.tools.driving import RUN_TOOLS_DOC, Confirm, audit_log, drive_tools, loop_options
from odin_client.types.errors import NotFound, StreamInterrupted
from odin_client.types.results import (
    Answer,
    Embeddings,
    Erasure,
    Generation,
    Retrieval,
    generation_from_proto,
    retrieval_from_proto,
)
from odin_client.types.status import IndexStatusInfo, ModelList


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


class OdinClient(DocumentCalls, GraphCalls):
    """Typed client for Freki and Geri. Thread-safe; close it (or use ``with``) when done."""

    def retrieve(self, query: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                 mode: str = "", score_threshold: float | None = None, document_ids: Iterable[str] = (),
                 query_variants: Iterable[str] = (), tenant_id: str | None = None,
                 deadline_s: float | None = None, graph_expand: bool | None = None,
                 explain: bool = False) -> Retrieval:
        """Retrieve the chunks most relevant to ``query`` from Freki.

        Args:
            query: The question or search text.
            top_k: Chunks to return; 0 = server default.
            filters: Metadata conditions, ``{key: value or [values]}``.
            mode: "", "dense", "sparse" or "hybrid" ("" = server default).
            score_threshold: Minimum relevance in [0, 1].
            document_ids: Restrict to these documents.
            query_variants: Other phrasings of the query; Freki fuses the results of all.
            tenant_id: Overrides the configured tenant.
            deadline_s: Overrides the configured deadline (retries included).
            graph_expand: Add the top hits' linked documents (None = server default).
            explain: Each source's ``context`` document carries an Explanation of its score.
        """
        request = messages.retrieve_request(
            query, tenant_id=self._tenant(tenant_id), top_k=top_k, filters=filters, mode=mode,
            score_threshold=score_threshold, document_ids=list(document_ids), query_variants=list(query_variants),
            graph_expand=graph_expand, explain=explain,
        )
        start = time.perf_counter()
        resp, attempts = self._unary(self._freki().RetrieveContext, request, service="freki",
                                     name="RetrieveContext", budget_s=deadline_s or self.settings.deadline_s,
                                     idempotent_read=True)
        return retrieval_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    def generate(self, prompt: str, *, context: common_pb2.RAGContext | None = None, model: str = "",
                 system_prompt: str = "", max_tokens: int | None = None, temperature: float | None = None,
                 tenant_id: str | None = None, deadline_s: float | None = None,
                 **options: Any) -> Generation:
        """Generate a complete answer with Geri, grounded in ``context`` when given.

        ``options`` are :func:`odin_client.protocol.messages.generate_request`'s: ``json_schema`` (the reply's JSON is
        in ``Generation.json``), ``session_id`` / ``owner_id``, ``messages`` (earlier turns, tool results),
        ``tools`` / ``tool_choice`` (the calls are in ``Generation.tool_calls``).
        """
        request = messages.generate_request(
            prompt, tenant_id=self._tenant(tenant_id), context=context, model=model,
            system_prompt=system_prompt, max_tokens=max_tokens, temperature=temperature, **options,
        )
        start = time.perf_counter()
        resp, attempts = self._unary(self._geri().Generate, request, service="geri", name="Generate",
                                     budget_s=deadline_s or self.settings.generate_deadline_s,
                                     idempotent_read=False)
        return generation_from_proto(resp, elapsed_ms=_ms_since(start), attempts=attempts)

    def generate_stream(self, prompt: str, *, context: common_pb2.RAGContext | None = None,
                        model: str = "", system_prompt: str = "", max_tokens: int | None = None,
                        temperature: float | None = None, tenant_id: str | None = None,
                        deadline_s: float | None = None, **options: Any) -> Iterator[str | Generation]:
        """Stream an answer from Geri: text deltas (``str``), then exactly one :class:`Generation`.

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        request = messages.generate_request(
            prompt, tenant_id=self._tenant(tenant_id), context=context, model=model,
            system_prompt=system_prompt, max_tokens=max_tokens, temperature=temperature, **options,
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
            mode: str = "", tenant_id: str | None = None, model: str = "", max_tokens: int | None = None,
            session_id: str = "", owner_id: str = "", grounded: bool = True, allow_no_context: bool = False,
            temperature: float | None = None, on_text: Callable[[str], None] | None = None,
            history: Iterable[common_pb2.ChatTurn] = ()) -> Answer:
        """Answer ``question`` from the indexed documents: retrieve with Freki, then answer with Geri.

        By default the answer is grounded (docs/answers.md, GeriService.Answer): cited sentence by sentence,
        with a summary, key details and a confidence — or ``answered=False`` with a reason when the sources do
        not say. With ``session_id`` the question continues a conversation (Geri rewrites a follow-up into a
        standalone query before retrieval); ``history`` does the same with turns the caller keeps.
        ``on_text`` gets the checked answer text (see :meth:`ask_stream` for text as it is written).
        ``grounded=False`` gives the free-text answer of earlier versions (streamed to ``on_text`` when
        given; ``allow_no_context`` answers without sources if Freki is down).

        Raises:
            ServiceUnavailable: naming Freki or Geri, when a leg failed after retries.
            OdinError: any other failure (e.g. FAILED_PRECONDITION when no model produced a valid answer).
        """
        if not grounded:
            return free_text_ask(self, question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                                 allow_no_context=allow_no_context, model=model, max_tokens=max_tokens,
                                 temperature=temperature, on_text=on_text)
        prepared = self._prepare(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id, model=model,
                                 max_tokens=max_tokens, session_id=session_id, owner_id=owner_id,
                                 temperature=temperature, history=history)
        spec = call_specs.answer(self.settings, prepared.request)
        started = time.perf_counter()
        resp, attempts = self._unary(self._geri().Answer, spec.request, service="geri", name="Answer",
                                     budget_s=spec.budget_s, idempotent_read=spec.idempotent_read)
        answer = finish(prepared, resp, answer_started=started, attempts=attempts)
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer

    def ask_stream(self, question: str, *, top_k: int = 0, filters: messages.Filters | None = None,
                   mode: str = "", tenant_id: str | None = None, model: str = "", max_tokens: int | None = None,
                   session_id: str = "", owner_id: str = "", temperature: float | None = None,
                   history: Iterable[common_pb2.ChatTurn] = ()) -> Iterator[str | Answer]:
        """The grounded answer of :meth:`ask`, streamed (GeriService.AnswerStream): the provisional answer text
        (``str`` deltas) as the model writes it, then exactly one checked :class:`Answer`. Its ``revised`` is
        True when its ``text`` differs from the deltas (the check replaced or withdrew them): show ``text``.

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        prepared = self._prepare(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id, model=model,
                                 max_tokens=max_tokens, session_id=session_id, owner_id=owner_id,
                                 temperature=temperature, history=history)
        spec = call_specs.answer_stream(self.settings, prepared.request)
        stub = self._geri()
        started = time.perf_counter()
        attempts: list[int] = []
        events = self.runner.stream(
            lambda timeout: stub.AnswerStream(spec.request, timeout=timeout, metadata=self._metadata),
            service="geri", method="AnswerStream", budget_s=spec.budget_s,
            retryable=retryable(spec.idempotent_read), on_attempt=attempts.append)
        received = 0
        try:
            for event in events:
                received += 1
                kind = event.WhichOneof("event")
                if kind == "text_delta":
                    yield event.text_delta
                elif kind == "final":
                    yield finish(prepared, event.final, answer_started=started, attempts=len(attempts))
                    return
        finally:
            events.close()  # a consumer that stops early cancels the call now
        raise StreamInterrupted(
            f"Geri (generation) AnswerStream ended after {received} event(s) without its final event; "
            "the answer is incomplete", service="geri", details="stream ended without final event")

    def _prepare(self, question: str, *, tenant_id: str | None, history: Iterable[common_pb2.ChatTurn],
                 **options: Any) -> Prepared:
        opts = AskOptions(self._tenant(tenant_id), history=tuple(history), **options)
        return drive(prepare(question, opts, self.settings), self._perform)

    def _perform(self, call: Call) -> Any:
        if isinstance(call, RetrieveCall):
            return self.retrieve(call.query, query_variants=call.variants, **call.options)
        return self._call(call_specs.rewrite_query(self.settings, call.request))

    def run_tools(self, question: str, registry: ToolRegistry, *, confirm: Confirm | None = None,
                  actor: str = "", max_steps: int | None = None, first_tool_choice: str = "auto",
                  **options: Any) -> ToolLoopResult:
        opts = loop_options(self.settings, max_steps=max_steps, first_tool_choice=first_tool_choice, **options)
        return drive_tools(self.generate, question, registry, opts, confirm=confirm, actor=actor,
                                timeout_s=self.settings.tool_timeout_s,
                                audit=audit_log(self.settings.tool_audit_log))

    run_tools.__doc__ = RUN_TOOLS_DOC

    def get_session(self, session_id: str, *, tenant_id: str | None = None) -> geri_pb2.Session | None:
        """A conversation's stored turns in Geri, or None when it does not exist (or expired)."""
        try:
            return self._call(call_specs.get_session(self.settings, session_id, tenant_id=tenant_id))
        except NotFound:
            return None

    def delete_session(self, session_id: str, *, tenant_id: str | None = None) -> bool:
        """Forget one conversation; whether it existed."""
        return self._call(call_specs.delete_session(self.settings, session_id, tenant_id=tenant_id))

    def erase_owner(self, owner_id: str, *, tenant_id: str | None = None) -> Erasure:
        """GDPR erasure of a data owner everywhere: Freki's documents and Geri's conversations."""
        documents, sessions = call_specs.erase_owner(self.settings, owner_id, tenant_id=tenant_id)
        return call_specs.erasure(self._call(documents), self._call(sessions))

    def embed(self, texts: Sequence[str], *, tenant_id: str | None = None) -> Embeddings:
        """Embed texts with Freki's embedding model (unit vectors, in order)."""
        return self._call(call_specs.embed(self.settings, texts, tenant_id=tenant_id))

    def status(self, *, tenant_id: str | None = None, deadline_s: float | None = None) -> IndexStatusInfo:
        """Freki's index status (document and chunk counts, embedding model, store)."""
        return self._call(call_specs.index_status(self.settings, tenant_id=tenant_id, deadline_s=deadline_s))

    def models(self, *, deadline_s: float | None = None) -> ModelList:
        """Models Geri can serve, and its default."""
        return self._call(call_specs.list_models(self.settings, deadline_s=deadline_s))

