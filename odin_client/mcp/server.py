"""The MCP server: Odin's calls as MCP tools and resources, for the caller's tenant and scopes.

:class:`WolfMcpServer` is the SDK's ``MCPServer`` with three rules added on top of it:

- ``tools/list`` shows only the tools the caller's scopes allow (``index_text`` needs ``write``,
  ``delete_document`` needs ``delete``), and ``tools/call`` refuses the others with a tool error that names
  the scope, whether or not the client listed them first;
- a call with an argument the tool does not take is refused (a ``tenant_id`` above all: the tenant comes
  from the API key, never from the arguments);
- documents are resources ``wolf://<tenant>/<document id>`` (the id percent-encoded), readable only in the
  caller's own tenant.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    ToolAnnotations,
)
from mcp_types import Resource as McpResource
from mcp_types import ResourceTemplate as McpResourceTemplate
from mcp_types import Tool as McpTool
from pydantic import AnyUrl

from odin_client.client import AsyncOdinClient
from odin_client.mcp.access import Access, ApiKeyVerifier, request_access
from odin_client.mcp.clients import AsyncClientPool
from odin_client.mcp.settings import McpSettings
from odin_client.mcp.tools import OdinTools
from odin_client.mcp.users import UserHeader, call_user, current_user, request_user
from odin_client.settings import OdinSettings
from odin_client.types.errors import NotFound, OdinError
from wolf_service.identity import UserIdError

INSTRUCTIONS = """Wolfpack RAG: search and cite a private document index. Use `search` to find passages (each
with document_id, chunk_id, location and score), `ask` for an answer written from the documents with
citations, `get_document` / `list_documents` / `links` to look around. Documents are also resources
wolf://<tenant>/<document id>. Say so when the results are empty: the documents do not contain it."""
SCHEME = "wolf"


def document_uri(tenant: str, document_id: str) -> str:
    """The resource URI of a document (the id percent-encoded, so ``/``, ``#`` and ``?`` survive)."""
    return f"{SCHEME}://{quote(tenant, safe='')}/{quote(document_id, safe='')}"


def parse_document_uri(uri: str) -> tuple[str, str]:
    """(tenant, document id) of a ``wolf://`` URI; ResourceNotFoundError for any other URI."""
    parts = urlsplit(uri)
    document_id = unquote(parts.path.removeprefix("/"))
    if parts.scheme != SCHEME or not parts.netloc or not document_id or parts.query or parts.fragment:
        raise ResourceNotFoundError(f"not a document resource: {uri[:200]!r} (expected wolf://<tenant>/<document id>,"
                                    " the id percent-encoded)")
    return unquote(parts.netloc), document_id


class WolfMcpServer(MCPServer[Any]):
    """MCPServer whose tools and resources act for the calling key (see the module docstring)."""

    def __init__(self, settings: McpSettings, odin: OdinSettings, *, default_access: Access | None,
                 **kwargs: Any) -> None:
        self.limits = settings
        self.pool = AsyncClientPool(odin, settings.clients_cached)
        self._default = default_access
        # Over stdio (a fixed access) the user is Odin's own setting; over HTTP each request may name one.
        self._stdio_user = (odin.user_id or "") if default_access is not None else None

        @asynccontextmanager
        async def lifespan(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
            try:
                yield {}
            finally:
                await self.pool.close()

        super().__init__(name="wolfpack-rag", title="Wolfpack RAG", version="1", instructions=INSTRUCTIONS,
                         lifespan=lifespan, **kwargs)
        self.tools = OdinTools(settings, self._client)
        self.scope_of: dict[str, str] = {}
        for name, fn, description, scope, read_only in self.tools.table():
            hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=name == "delete_document",
                                    idempotent_hint=read_only, open_world_hint=False)
            self.add_tool(fn, name=name, description=description, structured_output=True, annotations=hints)
            self.scope_of[name] = scope
        self._advertise_limits()

    def _advertise_limits(self) -> None:
        # The tools enforce these limits themselves (with errors naming the setting); the schema tells the agent.
        limits = self.limits
        bounds = {"query": ("maxLength", limits.max_query_chars), "question": ("maxLength", limits.max_query_chars),
                  "top_k": ("maximum", limits.max_top_k), "page_size": ("maximum", limits.max_page_size),
                  "max_links": ("maximum", limits.max_page_size), "text": ("maxLength", limits.max_text_chars),
                  "document_id": ("maxLength", limits.max_id_chars), "source": ("maxLength", limits.max_id_chars)}
        for name in self.scope_of:
            tool = self._tool_manager.get_tool(name)
            for field, schema in (tool.parameters.get("properties", {}) if tool else {}).items():
                if field in bounds:
                    key, value = bounds[field]
                    schema[key] = value

    def access(self) -> Access:
        """The caller of the request being served."""
        found = request_access(self._default)
        if found is None:  # the HTTP app requires a key before any request gets here
            raise ToolError("no API key: send 'Authorization: Bearer <key>'")
        return found

    async def _client(self) -> AsyncOdinClient:
        client = await self.pool.get(self.access())
        user = current_user()
        return client.for_user(user) if user else client

    def _user(self, context: Context[Any, Any] | None) -> str:
        """The user the request's ``_meta`` (or HTTP header) names; UserIdError when it is malformed."""
        try:
            meta = context.request_context.meta if context is not None else None
        except ValueError:  # a context outside a request
            meta = None
        return request_user(meta, self.limits.user_id_max_chars, stdio_user=self._stdio_user)

    async def list_tools(self) -> list[McpTool]:
        """The tools the caller's scopes allow."""
        access = self.access()
        return [t for t in await super().list_tools() if access.holds(self.scope_of.get(t.name, "admin"))]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """Refuse calls the caller's scopes do not allow and arguments the tool does not take; then run it."""
        access = self.access()
        scope = self.scope_of.get(name)
        if scope is None:
            raise ToolError(f"there is no tool {name[:64]!r}; the tools are {', '.join(sorted(self.scope_of))}")
        if not access.holds(scope):
            raise ToolError(f"{name} needs scope {scope!r}; the API key {access.name!r} holds "
                            f"{', '.join(sorted(access.scopes)) or 'none'}")
        tool = self._tool_manager.get_tool(name)
        known = set((tool.parameters if tool else {}).get("properties", {}))
        unknown = sorted(str(k)[:64] for k in arguments if k not in known)
        if unknown:
            hint = (" (the tenant comes from the API key; no tool takes one)"
                    if any("tenant" in k.lower() for k in unknown) else "")
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            raise ToolError(f"{name} takes no argument {', '.join(map(repr, unknown[:5]))}{more}{hint}; "
                            f"it takes {', '.join(sorted(known))}")
        try:
            token = call_user.set(self._user(context))
        except UserIdError as exc:
            raise ToolError(str(exc)) from None
        try:
            return await super().call_tool(name, arguments, context)
        finally:
            call_user.reset(token)

    async def _handle_list_resources(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        """``resources/list`` for the user its ``_meta`` names, checked as for tool calls and resource reads."""
        try:
            token = call_user.set(self._user(Context(request_context=ctx, mcp_server=self)))
        except UserIdError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        try:
            return await super()._handle_list_resources(ctx, params)
        finally:
            call_user.reset(token)

    async def list_resources(self) -> list[McpResource]:
        """The caller's documents (the first ``max_page_size``), as ``wolf://`` resources."""
        access = self.access()
        try:
            page = await (await self._client()).list_documents(page_size=self.limits.max_page_size)
        except OdinError as exc:
            raise ResourceError(str(exc)) from exc
        return [McpResource(uri=document_uri(access.tenant_name, d.document_id), name=d.document_id,
                            title=d.metadata.get("title") or d.source, mime_type="application/json",
                            description=f"{d.content_type or 'document'}, {d.chunk_count} chunk(s), from {d.source}")
                for d in page.documents]

    async def list_resource_templates(self) -> list[McpResourceTemplate]:
        """One template: a document by tenant and id."""
        return [McpResourceTemplate(uri_template=f"{SCHEME}://{{tenant}}/{{document_id}}", name="document",
                                    mime_type="application/json",
                                    description="A document's record; the tenant is the caller's own, the id "
                                                "percent-encoded")]

    async def read_resource(self, uri: AnyUrl | str,
                            context: Context[Any, Any] | None = None) -> Iterable[ReadResourceContents]:
        """A document's record as JSON, if it is in the caller's tenant."""
        tenant, document_id = parse_document_uri(str(uri))
        access = self.access()
        try:
            token = call_user.set(self._user(context))
        except UserIdError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        try:
            return await self._read_document(uri, tenant, document_id, access)
        finally:
            call_user.reset(token)

    async def _read_document(self, uri: AnyUrl | str, tenant: str, document_id: str,
                             access: Access) -> Iterable[ReadResourceContents]:
        if tenant != access.tenant_name:
            raise ResourceNotFoundError(f"{uri!s:.200}: the API key {access.name!r} is for tenant "
                                        f"{access.tenant_name!r}, not {tenant[:64]!r}")
        try:
            record = await (await self._client()).get_document(document_id)
        except NotFound as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except OdinError as exc:
            raise ResourceError(str(exc)) from exc
        return [ReadResourceContents(content=json.dumps(record.to_dict(), ensure_ascii=False),
                                     mime_type="application/json")]


def stdio_server(settings: McpSettings, odin: OdinSettings, access: Access) -> WolfMcpServer:
    """The server for one local agent over stdio, acting as ``access``."""
    return WolfMcpServer(settings, odin, default_access=access)


def http_server(settings: McpSettings, odin: OdinSettings) -> WolfMcpServer:
    """The server for remote agents over Streamable HTTP: every request must carry a configured API key."""
    if not settings.api_keys:
        raise ValueError("the http transport needs api_keys (the same entries as Freki's security.api_keys); "
                         "without keys use the stdio transport")
    base = f"http://{settings.host}:{settings.port or 1}"
    auth = AuthSettings(issuer_url=AnyUrl(base), resource_server_url=None, required_scopes=["read"])  # type: ignore[arg-type]
    return WolfMcpServer(settings, odin, default_access=None, auth=auth,
                         token_verifier=ApiKeyVerifier(settings.api_keys))


def http_app(server: WolfMcpServer) -> Any:
    """The Starlette app of the Streamable HTTP transport (serve it with uvicorn)."""
    limits = server.limits
    app = server.streamable_http_app(streamable_http_path=limits.path, max_request_body_size=limits.max_body_bytes,
                                     max_sessions=limits.max_sessions,
                                     session_idle_timeout=limits.session_idle_timeout_s, host=limits.host)
    return UserHeader(app, limits.user_id_max_chars)
