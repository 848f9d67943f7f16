"""``odin mcp`` over stdio, driven by the MCP SDK's own client: the process an agent starts, against the real
Freki and Geri. The agent acts with a read-only key, so writing and deleting are neither listed nor allowed."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters

from tests.odin_client.mcp.conftest import ROOT, child_env, odin_mcp_args, secret
from wolf_service.serving import ServerHandle

pytestmark = pytest.mark.integration


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def _error(result: Any) -> str:
    assert result.is_error, result
    return str(result.content[0].text)


def test_an_agent_over_stdio_searches_and_asks_and_is_refused_what_its_key_may_not(
        keyed_freki: ServerHandle, keyed_geri: ServerHandle, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="wolf_service.access")
    params = StdioServerParameters(command=sys.executable, args=odin_mcp_args(keyed_freki, keyed_geri, "--allow",
                                                                               "read,write,delete"),
                                   env=child_env(ODIN_API_KEY=secret("acme-ro"), ODIN_USER_ID="desk-1",
                                                 ODIN_MCP_API_KEYS=json.dumps(_keys())), cwd=str(ROOT))

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(params, read_timeout_seconds=300) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["search"] = _data(await client.call_tool("search", {"query": "Which port does the admin API use?",
                                                                    "top_k": 3}))
            out["sparse"] = _data(await client.call_tool("search", {"query": "HR-4012", "mode": "sparse"}))
            out["delete"] = _error(await client.call_tool("delete_document", {"document_id": "ops/handbook.md"}))
            out["malformed"] = _error(await client.call_tool("search", {"query": "port", "top_k": "many"}))
            out["missing"] = _error(await client.call_tool("get_document", {}))
            out["unknown"] = _error(await client.call_tool("drop_tables", {}))
            out["tenant"] = _error(await client.call_tool("search", {"query": "payroll", "tenant_id": "globex"}))
            out["huge"] = _error(await client.call_tool("search", {"query": "x" * 100_000}))
            out["top_k"] = _error(await client.call_tool("search", {"query": "port", "top_k": 10_000}))
            out["not_found"] = _error(await client.call_tool("get_document", {"document_id": "no/such.md"}))
            out["doc"] = _data(await client.call_tool("get_document", {"document_id": "ops/handbook.md"}))
            out["links"] = _data(await client.call_tool("links", {"document_id": "ops/handbook.md"}))
            out["listed"] = _data(await client.call_tool("list_documents", {}))
            out["ask"] = _data(await client.call_tool("ask", {"question": "Which TCP port does the Hrafn Relay "
                                                                          "admin API listen on?"}))
            out["other_user"] = _error(await client.call_tool("search", {"query": "coolant"},
                                                              meta={"x-wolf-user": "mallory"}))
            out["after"] = _data(await client.call_tool("search", {"query": "coolant", "top_k": 1}))
            with pytest.raises(MCPError) as listed_as_other:
                await client.list_resources(meta={"x-wolf-user": "mallory"}, cache_mode="bypass")
            out["list_other_user"] = str(listed_as_other.value)
        return out

    got = asyncio.run(session())
    # The key is read-only: --allow cannot give the agent more than the key holds.
    assert set(got["tools"]) == {"search", "ask", "get_document", "list_documents", "links"}
    search = got["tools"]["search"]
    assert "document_id" in (search.description or "") and search.input_schema["properties"]["top_k"]["maximum"] == 50
    assert "tenant_id" not in json.dumps([t.input_schema for t in got["tools"].values()])
    top = got["search"]["passages"][0]
    assert top["document_id"] == "ops/handbook.md" and "7431" in top["text"]
    assert top["chunk_id"] and top["title"] == "Hrafn Relay handbook" and 0 < top["score"] <= 1
    assert top["location"].get("section") == "Admin API"
    assert got["sparse"]["passages"][0]["document_id"] == "ops/handbook.md"
    assert "needs scope 'delete'" in got["delete"] and "acme-ro" in got["delete"]
    assert "top_k" in got["malformed"]
    assert "document_id" in got["missing"]
    assert "no tool 'drop_tables'" in got["unknown"]
    assert "tenant_id" in got["tenant"] and "comes from the API key" in got["tenant"]
    assert "100,000 characters" in got["huge"] and "max_query_chars" in got["huge"]
    assert "max_top_k" in got["top_k"]
    assert "NOT_FOUND" in got["not_found"]
    assert got["doc"]["tenant_id"] == "acme" and got["doc"]["chunk_count"] >= 1
    assert [e["target"] for e in got["links"]["outgoing"]] == ["Coolant Spec"]
    assert got["links"]["outgoing"][0]["target_document_id"] == "specs/coolant.md"
    assert {d["document_id"] for d in got["listed"]["documents"]} == {"ops/handbook.md", "specs/coolant.md"}
    ask = got["ask"]
    assert ask["sources"] and ask["sources"][0]["document_id"] == "ops/handbook.md"
    if ask["answered"]:
        assert ask["citations"] and ask["citations"][0]["document_id"] == "ops/handbook.md"
    else:
        assert ask["reason"]
    assert got["after"]["passages"][0]["document_id"] == "specs/coolant.md"  # every error left the server serving
    assert "over stdio the user is Odin's user_id setting (desk-1)" in got["other_user"]
    assert "over stdio the user is Odin's user_id setting (desk-1)" in got["list_other_user"]
    assert {r.user for r in caplog.records if r.name == "wolf_service.access"} == {"desk-1"}  # type: ignore[attr-defined]


def _keys() -> list[dict[str, Any]]:
    from tests.odin_client.mcp.conftest import key_entries

    return key_entries()
