"""The MCP server's own rules, without Freki and Geri running: resource URIs, whose access a key grants, which
tools each scope lists, and what ``odin mcp`` refuses to start with. The in-process client is the SDK's own."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from odin_client.cli import main as odin_main
from odin_client.mcp.access import Access, ApiKeyVerifier, stdio_access
from odin_client.mcp.server import document_uri, parse_document_uri, stdio_server
from odin_client.mcp.settings import McpSettings
from odin_client.settings import OdinSettings
from wolf_service.auth import ApiKey, hash_key

KEYS = [ApiKey(name="ro", tenant="acme", sha256=hash_key("ro-secret"), scopes=["read"]),
        ApiKey(name="all", tenant="globex", sha256=hash_key("all-secret")),
        ApiKey(name="boss", tenant="acme", sha256=hash_key("boss-secret"), scopes=["admin"])]


@pytest.mark.parametrize("document_id", ["faq/design#why", "50% off?", "Übersicht 2026", "設計.md", "a b/../c"])
def test_a_document_uri_round_trips_any_id(document_id: str) -> None:
    uri = document_uri("acme", document_id)
    assert uri.startswith("wolf://acme/") and "/" not in uri.removeprefix("wolf://acme/")
    assert parse_document_uri(uri) == ("acme", document_id)


@pytest.mark.parametrize("uri", ["wolf://acme", "wolf://acme/", "file:///etc/passwd", "wolf://acme/x?tenant=b",
                                 "wolf:///x", "https://acme/x"])
def test_other_uris_are_not_documents(uri: str) -> None:
    with pytest.raises(ResourceNotFoundError, match="not a document resource"):
        parse_document_uri(uri)


def test_a_key_grants_its_own_tenant_and_scopes() -> None:
    verifier = ApiKeyVerifier(KEYS)
    ro = asyncio.run(verifier.verify_token("ro-secret"))
    every = asyncio.run(verifier.verify_token("all-secret"))
    assert ro is not None and ro.client_id == "ro" and ro.scopes == ["read"] and ro.claims == {"wolf_tenant": "acme"}
    assert every is not None and every.scopes == ["read", "write", "delete", "admin"]
    assert asyncio.run(verifier.verify_token("ro-secret-")) is None
    assert asyncio.run(verifier.verify_token("")) is None


def test_stdio_offers_what_is_allowed_and_never_more_than_the_key_holds() -> None:
    assert stdio_access([], None, "", ["read"]) == Access("stdio", "", frozenset({"read"}))
    narrowed = stdio_access(KEYS, "ro-secret", "someone-else", ["read", "write", "delete"])
    assert narrowed == Access("ro", "acme", frozenset({"read"}))
    assert stdio_access(KEYS, "boss-secret", "", ["read", "delete"]).scopes == {"read", "delete"}
    assert stdio_access(KEYS, "unknown", "t", ["read", "write"]) == Access("stdio", "t", frozenset({"read", "write"}))


def _tools(scopes: set[str]) -> list[str]:
    server = stdio_server(McpSettings(), OdinSettings(), Access("stdio", "", frozenset(scopes)))

    async def listed() -> list[str]:
        async with Client(server) as client:
            return sorted(t.name for t in (await client.list_tools()).tools)

    return asyncio.run(listed())


def test_each_scope_lists_its_tools() -> None:
    reads = ["ask", "get_document", "links", "list_documents", "search"]
    assert _tools({"read"}) == reads
    assert _tools({"read", "write"}) == sorted([*reads, "index_text"])
    assert _tools({"read", "delete"}) == sorted([*reads, "delete_document"])
    assert _tools({"admin"}) == sorted([*reads, "delete_document", "index_text"])


def test_freki_down_is_a_tool_error_naming_it() -> None:
    odin = OdinSettings(freki_target="127.0.0.1:1", deadline_s=2, retry_max_attempts=2, retry_initial_backoff_s=0.01)
    server = stdio_server(McpSettings(), odin, Access("stdio", "", frozenset({"read"})))

    async def call() -> tuple[object, object]:
        async with Client(server) as client:
            down = await client.call_tool("search", {"query": "port"})
            listed = await client.list_tools()
            return down, listed

    down, listed = asyncio.run(call())
    assert down.is_error and "UNAVAILABLE" in down.content[0].text and "freki" in down.content[0].text  # type: ignore[attr-defined]
    assert listed.tools  # type: ignore[attr-defined]


def test_odin_mcp_refuses_to_start_without_what_it_needs(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert odin_main(["mcp", "--transport", "http"]) == 2
    assert "needs api_keys" in capsys.readouterr().err
    assert odin_main(["mcp", "--allow", "read,everything"]) == 2
    assert "stdio_scopes" in capsys.readouterr().err
    monkeypatch.setenv("ODIN_MCP_API_KEYS", json.dumps([{"name": "x", "tenant": "t", "sha256": "not-a-hash"}]))
    assert odin_main(["mcp"]) == 2
    assert "sha256" in capsys.readouterr().err


def test_a_client_evicted_from_the_pool_finishes_its_calls_before_it_is_closed() -> None:
    from odin_client.mcp.clients import AsyncClientPool

    async def run() -> tuple[bool, bool, int, int]:
        pool = AsyncClientPool(OdinSettings(deadline_s=0.05, generate_deadline_s=0.05, index_deadline_s=0.05), 1)
        first = await pool.get(Access("a", "t1", frozenset({"read"}), api_key="key-a"))
        again = await pool.get(Access("a", "t1", frozenset({"read"}), api_key="key-a"))
        await pool.get(Access("b", "t2", frozenset({"read"}), api_key="key-b"))  # evicts the first
        evicted_open = not first._closed
        retired = pool.open_clients
        await asyncio.sleep(0.2)
        closed_later = first._closed
        left = pool.open_clients
        await pool.close()
        return first is again and evicted_open, closed_later, retired, left

    reused_and_open, closed_later, retired, left = asyncio.run(run())
    assert reused_and_open and closed_later and (retired, left) == (2, 1)


def test_odin_and_its_cli_load_without_the_optional_sdks() -> None:
    import subprocess
    import sys

    from tests.odin_client.mcp.conftest import ROOT, child_env

    probe = ("import sys, odin_client, odin_client.cli, odin_client.frameworks, odin_client.mcp, odin_client.cli.mcp; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'langchain_core', 'llama_index'}))")
    out = subprocess.run([sys.executable, "-c", probe], env=child_env(), cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_a_flood_of_unknown_arguments_gets_a_short_refusal() -> None:
    server = stdio_server(McpSettings(), OdinSettings(freki_target="127.0.0.1:1"), Access("s", "", frozenset({"read"})))

    async def call() -> object:
        async with Client(server) as client:
            return await client.call_tool("search", {"query": "q", **{f"k{i}" * 50: i for i in range(10_000)}})

    result = asyncio.run(call())
    text = result.content[0].text  # type: ignore[attr-defined]
    assert result.is_error and "and 9995 more" in text and len(text) < 1_000  # type: ignore[attr-defined]
