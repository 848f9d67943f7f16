"""The Odin client: retrieve from Freki, generate with Geri, or ``ask`` (a grounded answer: Freki's context
answered by Geri's Answer RPC).

Example (the blocking client; the asyncio one awaits the same calls inside ``async with``):
    with OdinClient(OdinSettings(freki_target="127.0.0.1:50051")) as odin:
        odin.index(["docs/"])
        answer = odin.ask("Which port does the gateway listen on?")
        print(answer.text, [s.document_id for s in answer.sources])

``_async/client.py`` is the source of both clients; ``_sync/client.py`` is generated from it (see
:mod:`odin_client.client`). Every call has a deadline (settings, overridable per call) that bounds all of its
retries; see :mod:`odin_client.protocol.retry` for what is retried. Errors are subclasses of
:class:`~odin_client.types.errors.OdinError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from wolf.v1 import common_pb2, settings_pb2

from odin_client.asking.free_text import free_text_answer, without_context
from odin_client.asking.grounded import AskOptions, Call, Prepared, RetrieveCall, finish, prepare
from odin_client.client._async.documents import AsyncDocumentCalls
from odin_client.client._async.generation import AsyncGenerationCalls
from odin_client.client._async.graph import AsyncGraphCalls
from odin_client.client._async.sessions import AsyncSessionCalls
from odin_client.protocol import specs
from odin_client.protocol.messages import Filters
from odin_client.tools import ToolLoopResult, ToolRegistry
from odin_client.tools.driving import RUN_TOOLS_DOC, Confirm, loop_options, record_decision
from odin_client.tools.loop import ConfirmCall, GenerateCall, LoopCall, RunToolCall, tool_loop
from odin_client.types.errors import OdinError
from odin_client.types.results import Answer, Generation, Retrieval
from odin_client.types.status import IndexStatusInfo, ModelList


class AsyncOdinClient(AsyncDocumentCalls, AsyncGraphCalls, AsyncGenerationCalls, AsyncSessionCalls):
    """Typed client for Freki and Geri; close it (or use it as a context manager) when done."""

    async def retrieve(self, query: str, *, top_k: int = 0, filters: Filters | None = None, mode: str = "",
                       score_threshold: float | None = None, document_ids: Iterable[str] = (),
                       query_variants: Iterable[str] = (), tenant_id: str | None = None,
                       deadline_s: float | None = None, graph_expand: bool | None = None,
                       explain: bool = False, neighbours: int = 0) -> Retrieval:
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
            neighbours: Also return the previous and next N chunks of each hit's document, each marked by
                ``Source.neighbour_of`` (at most the server's ``retrieval.max_neighbours``).
        """
        return await self._call(specs.retrieve(
            self.settings, query, tenant_id=tenant_id, top_k=top_k, filters=filters, mode=mode,
            score_threshold=score_threshold, document_ids=document_ids, query_variants=query_variants,
            deadline_s=deadline_s, graph_expand=graph_expand, explain=explain, neighbours=neighbours))

    async def ask(self, question: str, *, top_k: int = 0, filters: Filters | None = None, mode: str = "",
                  tenant_id: str | None = None, model: str = "", max_tokens: int | None = None, session_id: str = "",
                  owner_id: str = "", grounded: bool = True, allow_no_context: bool = False,
                  temperature: float | None = None, on_text: Callable[[str], None] | None = None,
                  history: Iterable[common_pb2.ChatTurn] = ()) -> Answer:
        """Answer ``question`` from the indexed documents: retrieve with Freki, then answer with Geri.

        By default the answer is grounded (docs/answers.md, GeriService.Answer): cited sentence by sentence,
        with a summary, key details and a confidence — or ``answered=False`` with a reason when the sources do
        not say. With ``session_id`` the question continues a conversation (Geri rewrites a follow-up into a
        standalone query before retrieval); ``history`` does the same with turns the caller keeps.
        ``on_text`` gets the checked answer text (see :meth:`ask_stream` for text as it is written).
        ``grounded=False`` gives Geri's free-text answer (streamed to ``on_text`` when given;
        ``allow_no_context`` answers without sources if Freki is down).

        Raises:
            ServiceUnavailable: naming Freki or Geri, when a leg failed after retries.
            OdinError: any other failure (e.g. FAILED_PRECONDITION when no model produced a valid answer).
        """
        if not grounded:
            return await self._free_text_ask(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                                             allow_no_context=allow_no_context, model=model, max_tokens=max_tokens,
                                             temperature=temperature, on_text=on_text)
        prepared = await self._prepare(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                                       model=model, max_tokens=max_tokens, session_id=session_id, owner_id=owner_id,
                                       temperature=temperature, history=history)
        answer = await self._call(specs.answer(self.settings, prepared.request,
                                               lambda resp, took: finish(prepared, resp, took)))
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer

    async def ask_stream(self, question: str, *, top_k: int = 0, filters: Filters | None = None, mode: str = "",
                         tenant_id: str | None = None, model: str = "", max_tokens: int | None = None,
                         session_id: str = "", owner_id: str = "", temperature: float | None = None,
                         history: Iterable[common_pb2.ChatTurn] = ()) -> AsyncIterator[str | Answer]:
        """The grounded answer of :meth:`ask`, streamed (GeriService.AnswerStream): the provisional answer text
        (``str`` deltas) as the model writes it, then exactly one checked :class:`Answer`. Its ``revised`` is
        True when its ``text`` differs from the deltas (the check replaced or withdrew them): show ``text``.

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        prepared = await self._prepare(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id,
                                       model=model, max_tokens=max_tokens, session_id=session_id, owner_id=owner_id,
                                       temperature=temperature, history=history)
        items = self._stream_call(specs.answer_stream(self.settings, prepared.request,
                                                      lambda resp, took: finish(prepared, resp, took)))
        try:
            async for item in items:
                yield item
        finally:
            await items.aclose()  # a consumer that stops early cancels the call now

    async def _prepare(self, question: str, *, tenant_id: str | None, history: Iterable[common_pb2.ChatTurn],
                       **options: Any) -> Prepared:
        opts = AskOptions(self._tenant(tenant_id), history=tuple(history), **options)
        return await self._drive(prepare(question, opts, self.settings), self._perform)

    async def _perform(self, call: Call) -> Any:
        if isinstance(call, RetrieveCall):
            return await self.retrieve(call.query, query_variants=call.variants, **call.options)
        return await self._call(specs.rewrite_query(self.settings, call.request))

    async def _free_text_ask(self, question: str, *, top_k: int, filters: Filters | None, mode: str,
                             tenant_id: str | None, allow_no_context: bool, model: str, max_tokens: int | None,
                             temperature: float | None, on_text: Callable[[str], None] | None) -> Answer:
        started = time.perf_counter()
        retrieval: Retrieval | None = None
        note = ""
        try:
            retrieval = await self.retrieve(question, top_k=top_k, filters=filters, mode=mode, tenant_id=tenant_id)
        except OdinError as exc:
            note = without_context(exc, allow_no_context)
        generate_started = time.perf_counter()
        context = retrieval.context if retrieval is not None else None
        if on_text is None:
            generation = await self.generate(question, context=context, model=model, max_tokens=max_tokens,
                                             temperature=temperature, tenant_id=tenant_id)
        else:
            async for item in self.generate_stream(question, context=context, model=model, max_tokens=max_tokens,
                                                   temperature=temperature, tenant_id=tenant_id):
                if isinstance(item, Generation):
                    generation = item
                else:
                    on_text(item)
        return free_text_answer(question, retrieval, generation, note=note, started=started,
                                generate_started=generate_started)

    async def run_tools(self, question: str, registry: ToolRegistry, *, confirm: Confirm | None = None,
                        actor: str = "", max_steps: int | None = None, first_tool_choice: str = "auto",
                        **options: Any) -> ToolLoopResult:
        opts = loop_options(self.settings, max_steps=max_steps, first_tool_choice=first_tool_choice, **options)
        async def perform(call: LoopCall) -> Any:
            if isinstance(call, GenerateCall):
                return await self.generate(call.prompt, **call.options)
            if isinstance(call, ConfirmCall):
                return await self._confirmed(confirm, call.call)
            if isinstance(call, RunToolCall):
                return await self._run_tool(registry, call.call, call.caller)
            return record_decision(self._tool_audit, actor, call)

        return await self._drive(tool_loop(question, registry, opts), perform)

    run_tools.__doc__ = RUN_TOOLS_DOC

    async def status(self, *, tenant_id: str | None = None, deadline_s: float | None = None) -> IndexStatusInfo:
        """Freki's index status (document and chunk counts, embedding model, store)."""
        return await self._call(specs.index_status(self.settings, tenant_id=tenant_id, deadline_s=deadline_s))

    async def models(self, *, deadline_s: float | None = None) -> ModelList:
        """Models Geri can serve, and its default."""
        return await self._call(specs.list_models(self.settings, deadline_s=deadline_s))

    async def get_settings(self, service: str = "freki") -> settings_pb2.SettingsView:
        """The effective settings of ``service`` ("freki" or "geri"), secrets redacted; needs an admin key."""
        return await self._call(specs.get_settings(self.settings, service))

    async def update_settings(self, changes: dict[str, Any], *, service: str = "freki",
                              dry_run: bool = False) -> settings_pb2.UpdateSettingsResponse:
        """Apply ``changes`` (a JSON merge patch of the settings file, e.g. ``{"retrieval": {"top_k": 8}}``) to
        ``service``, validated as the file is and hot-reloaded; ``dry_run`` only validates. Needs an admin key."""
        return await self._call(specs.update_settings(self.settings, service, json.dumps(changes), dry_run))
