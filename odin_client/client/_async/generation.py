"""Model calls: Geri generates (whole, or streamed as text deltas), Freki embeds texts with its model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from wolf.v1 import common_pb2

from odin_client.client._async.calls import AsyncCalls
from odin_client.protocol import specs
from odin_client.protocol.messages import generate_request
from odin_client.types.results import Embeddings, Generation


class AsyncGenerationCalls(AsyncCalls):
    """Generate, GenerateStream and Embed."""

    async def generate(self, prompt: str, *, context: common_pb2.RAGContext | None = None, model: str = "",
                       system_prompt: str = "", max_tokens: int | None = None, temperature: float | None = None,
                       tenant_id: str | None = None, deadline_s: float | None = None,
                       json_schema: Mapping[str, Any] | None = None, session_id: str = "", owner_id: str = "",
                       messages: Sequence[common_pb2.ChatTurn] = (), tools: Sequence[common_pb2.ToolDefinition] = (),
                       tool_choice: str = "") -> Generation:
        """Generate a complete answer with Geri, grounded in ``context`` when given.

        ``json_schema`` asks for JSON of that schema (in ``Generation.json``); ``session_id`` / ``owner_id`` put the
        turn in a stored conversation; ``messages`` are earlier turns (and tool results) the caller keeps;
        ``tools`` / ``tool_choice`` offer tools (the calls are in ``Generation.tool_calls``).
        """
        request = generate_request(
            prompt, tenant_id=self._tenant(tenant_id), context=context, model=model, system_prompt=system_prompt,
            max_tokens=max_tokens, temperature=temperature, json_schema=json_schema, session_id=session_id,
            owner_id=owner_id, messages=messages, tools=tools, tool_choice=tool_choice)
        return await self._call(specs.generate(self.settings, request, deadline_s=deadline_s))

    async def generate_stream(self, prompt: str, *, context: common_pb2.RAGContext | None = None, model: str = "",
                              system_prompt: str = "", max_tokens: int | None = None,
                              temperature: float | None = None, tenant_id: str | None = None,
                              deadline_s: float | None = None, json_schema: Mapping[str, Any] | None = None,
                              session_id: str = "", owner_id: str = "", messages: Sequence[common_pb2.ChatTurn] = (),
                              tools: Sequence[common_pb2.ToolDefinition] = (),
                              tool_choice: str = "") -> AsyncIterator[str | Generation]:
        """Stream an answer from Geri: text deltas (``str``), then exactly one :class:`Generation`; arguments as
        :meth:`generate`.

        Raises:
            StreamInterrupted: the stream broke, or ended without its final event.
        """
        request = generate_request(
            prompt, tenant_id=self._tenant(tenant_id), context=context, model=model, system_prompt=system_prompt,
            max_tokens=max_tokens, temperature=temperature, json_schema=json_schema, session_id=session_id,
            owner_id=owner_id, messages=messages, tools=tools, tool_choice=tool_choice)
        items = self._stream_call(specs.generate_stream(self.settings, request, deadline_s=deadline_s))
        try:
            async for item in items:
                yield item
        finally:
            await items.aclose()  # a consumer that stops early cancels the call now

    async def embed(self, texts: Sequence[str], *, tenant_id: str | None = None) -> Embeddings:
        """Embed texts with Freki's embedding model (unit vectors, in order)."""
        return await self._call(specs.embed(self.settings, texts, tenant_id=tenant_id))
