"""Settings of the MCP server (``odin mcp``): env ``ODIN_MCP_…`` or a JSON file (``ODIN_MCP_SETTINGS_FILE``).

Freki and Geri are reached through the usual :class:`~odin_client.settings.OdinSettings` (``ODIN_…``).
``api_keys`` takes the same entries as Freki's and Geri's ``security.api_keys`` (name, tenant, sha256, scopes):
the Streamable HTTP transport refuses to start without them, and checks every request's bearer key against
them before it reaches a tool.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from wolf_service.auth import ApiKey, Scope, SecuritySettings
from wolf_service.settings import FileSettings


class McpSettings(FileSettings):
    """Where the MCP server listens, who may call it, and what one tool call may carry."""

    model_config = SettingsConfigDict(env_prefix="ODIN_MCP_", extra="forbid")

    transport: Literal["stdio", "http"] = Field(default="stdio", description="stdio (local agents) or http")
    host: str = Field(default="127.0.0.1", description="Listen address of the http transport")
    port: int = Field(default=8765, ge=0, le=65535, description="Listen port of the http transport")
    path: str = Field(default="/mcp", pattern=r"^/[A-Za-z0-9_\-/]*$", description="URL path of the MCP endpoint")
    api_keys: list[ApiKey] = Field(
        default_factory=list, description="Keys the http transport accepts (the entries of Freki's security.api_keys)")
    # stdio has no bearer key: the agent acts with Odin's configured key (ODIN_API_KEY) and tenant. Writing and
    # deleting are offered only when named here, so a local agent cannot change the index unless allowed to.
    stdio_scopes: list[Scope] = Field(
        default_factory=lambda: list[Scope](["read"]), description="Scopes the stdio transport offers tools for")

    max_query_chars: int = Field(default=4_000, ge=1, description="Characters of a search query or question")
    max_top_k: int = Field(default=50, ge=1, le=1000, description="Passages one search may return")
    max_passage_chars: int = Field(default=2_000, ge=100, description="Characters of one passage in a result")
    max_text_chars: int = Field(default=1_000_000, ge=1, description="Characters of a text given to index_text")
    max_id_chars: int = Field(default=1_024, ge=1, description="Characters of a document id or source name")
    max_filters: int = Field(default=16, ge=0, description="Metadata filter keys of one search")
    max_page_size: int = Field(default=200, ge=1, le=1000, description="Documents or links one listing returns")
    # Clients of the current protocol send each request on its own; older ones open a stateful session first.
    max_connections: int = Field(
        default=256, ge=1, description="HTTP connections and requests served at once (more get 503)")
    max_sessions: int = Field(default=100, ge=1, description="Stateful Streamable HTTP sessions open at once")
    session_idle_timeout_s: float = Field(default=1800.0, gt=0, description="Idle HTTP session lifetime")
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, description="HTTP request body, at most")
    user_id_max_chars: int = Field(
        default=128, ge=1, le=1024, description="Characters of a user id (_meta or X-Wolf-User); keep it at most "
                                                "the services' security.user_id_max_chars")
    clients_cached: int = Field(default=32, ge=1, description="Odin clients (one per API key) kept open")

    @field_validator("api_keys")
    @classmethod
    def _unique(cls, keys: list[ApiKey]) -> list[ApiKey]:
        return SecuritySettings(api_keys=keys).api_keys
