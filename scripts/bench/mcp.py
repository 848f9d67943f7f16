"""What the MCP path costs over a direct Odin retrieve, and whether scripted agent calls get what they should.

Prints figures; asserts nothing. A real Freki (packaged MiniLM, embedded Qdrant engine) and a real Geri
(embedded SmolLM2) run in this process on ``scripts/sample_corpus``; ``odin mcp`` runs as its own process,
once over stdio and once over Streamable HTTP, as an agent would start or reach it. The same queries go
(1) to AsyncOdinClient.retrieve directly, (2) to the MCP ``search`` tool in this process (SDK in-memory
transport: the MCP layer alone), (3) over stdio and (4) over HTTP, interleaved round by round; the first round
warms every path (and Freki's query-embedding and result caches, so the counted calls measure what each path
adds, not the search) and is not counted, except as "direct, cold": the first, uncached retrieve of each query.
Then 20 scripted agent-style calls over HTTP, with a read-only and a read-write key: each valid call must
succeed, each invalid one must come back as a tool error (or a refusal) whose text names what was wrong.

    .venv/bin/python -m scripts.bench.mcp [--rounds 6] [--top-k 5] [--no-geri]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from scripts.common import REPO, SAMPLE_CORPUS, child_pythonpath

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from odin_client import AsyncOdinClient, OdinClient, OdinSettings
from odin_client.mcp.access import Access
from odin_client.mcp.server import stdio_server
from odin_client.mcp.settings import McpSettings
from wolf_service.auth import hash_key

QUERIES = [
    "Which port does the admin API listen on?", "ingest port TLS", "metrics port for Prometheus",
    "How do I upgrade from version 3?", "What does error HR-4012 mean?", "relay.admin.bind setting",
    "How many events are kept in memory while offline?", "configuration file location",
    "How do devices reconnect?", "What is Hrafn Relay?", "firewall rules", "certificate renewal",
    "log level setting", "How is backpressure handled?", "supported platforms", "rolling upgrade",
    "error codes list", "default bind address", "FAQ: can I run two relays?", "What changed in 4.2?",
]
TENANT = "acme"
KEYS = {"reader": ("acme", ["read"], "bench-reader-key-0123456789"),
        "writer": ("acme", ["read", "write", "delete"], "bench-writer-key-0123456789")}
Call = tuple[str, str, str, dict[str, Any], bool, str]  # (what, key, tool, arguments, should succeed, must say)
AGENT_CALLS: list[Call] = [
    ("search a fact", "reader", "search", {"query": "admin API port", "top_k": 3}, True, "networking.md"),
    ("exact code, sparse", "reader", "search", {"query": "HR-4012", "mode": "sparse"}, True, "error-codes.md"),
    ("metadata filter", "reader", "search", {"query": "port", "filters": {"product": "hrafn-relay"}}, True,
     "networking.md"),
    ("list documents", "reader", "list_documents", {"page_size": 10}, True, "upgrading.md"),
    ("get a document", "reader", "get_document", {"document_id": "networking.md"}, True, "chunk_count"),
    ("links of a document", "reader", "links", {"document_id": "networking.md"}, True, "outgoing"),
    ("grounded answer", "reader", "ask", {"question": "Which port does the admin API listen on?"}, True,
     "networking.md"),
    ("index a note", "writer", "index_text", {"text": "# Rota\n\nBackups run at 02:00.", "source": "rota.md"}, True,
     "created"),
    ("find the new note", "writer", "search", {"query": "When do backups run?", "top_k": 1}, True, "rota.md"),
    ("delete the note", "writer", "delete_document", {"document_id": "rota.md"}, True, "chunks_deleted"),
    ("read key deletes", "reader", "delete_document", {"document_id": "networking.md"}, False, "needs scope 'delete'"),
    ("read key indexes", "reader", "index_text", {"text": "x", "source": "x.md"}, False, "needs scope 'write'"),
    ("tenant in arguments", "reader", "search", {"query": "port", "tenant_id": "globex"}, False, "from the API key"),
    ("top_k as text", "reader", "search", {"query": "port", "top_k": "ten"}, False, "top_k"),
    ("top_k too large", "reader", "search", {"query": "port", "top_k": 5000}, False, "max_top_k"),
    ("query too long", "reader", "search", {"query": "port " * 20_000}, False, "max_query_chars"),
    ("empty query", "reader", "search", {"query": "   "}, False, "must not be empty"),
    ("missing argument", "reader", "get_document", {}, False, "document_id"),
    ("unknown document", "reader", "get_document", {"document_id": "nope.md"}, False, "NOT_FOUND"),
    ("unknown tool", "reader", "rm_rf", {"path": "/"}, False, "no tool 'rm_rf'"),
]


def start_services(data: Path, with_geri: bool) -> tuple[Any, Any, Any, Any]:
    """Freki (and Geri) in this process; the sample corpus indexed."""
    from freki.api.server import build_server
    from freki.settings import FrekiSettings

    freki, engine = build_server(FrekiSettings(host="127.0.0.1", port=0, data_dir=data, shutdown_grace_s=1.0))
    geri = backend = None
    if with_geri:
        from geri.backends.embedded import EmbeddedBackend
        from geri.server import build_server as build_geri
        from geri.settings import GeriSettings

        settings = GeriSettings(host="127.0.0.1", port=0, backend="embedded", shutdown_grace_s=1.0)
        backend = EmbeddedBackend(settings)
        backend.prepare()
        geri = build_geri(settings, backend)
    with OdinClient(OdinSettings(freki_target=freki.address, tenant_id=TENANT)) as odin:
        os.chdir(SAMPLE_CORPUS)  # sources are named relative to the working directory
        odin.index(["."])
        os.chdir(REPO)
    return freki, engine, geri, backend


async def timed(fn: Callable[[str], Awaitable[Any]], queries: list[str]) -> list[float]:
    """Milliseconds of each call, in order."""
    out = []
    for query in queries:
        start = time.perf_counter()
        await fn(query)
        out.append((time.perf_counter() - start) * 1000)
    return out


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FREKI_", "GERI_", "ODIN_"))}
    env["PYTHONPATH"] = child_pythonpath()
    return env


def start_http(odin_args: list[str], config: Path, port: int) -> subprocess.Popen[bytes]:
    config.write_text(json.dumps({"api_keys": [{"name": n, "tenant": t, "scopes": s, "sha256": hash_key(k)}
                                               for n, (t, s, k) in KEYS.items()]}), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, *odin_args, "--transport", "http", "--port", str(port),
                             "--config", str(config)], env=child_env(), stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            httpx.post(f"http://127.0.0.1:{port}/mcp", json={}, timeout=1)
            return proc
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("odin mcp --transport http did not start")


def http_client(url: str, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEYS[key][2]}"}, timeout=300)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=300)


async def overhead(odin: OdinSettings, odin_args: list[str], url: str, rounds: int,
                   top_k: int) -> dict[str, list[float]]:
    """Per path, the milliseconds of every counted call."""
    times: dict[str, list[float]] = {"direct": [], "mcp in-process": [], "mcp stdio": [], "mcp http": [],
                                     "direct, cold": [], "warm-up": []}
    local = stdio_server(McpSettings(), odin, Access("bench", TENANT, frozenset({"read"})))
    stdio = StdioServerParameters(command=sys.executable, args=odin_args, env=child_env(), cwd=str(REPO))
    async with AsyncOdinClient(odin) as direct, Client(local) as inproc, Client(stdio) as over_stdio, \
            http_client(url, "reader") as over_http:
        def tool(client: Client) -> Callable[[str], Awaitable[Any]]:
            async def search(query: str) -> Any:
                result = await client.call_tool("search", {"query": query, "top_k": top_k})
                assert not result.is_error, result.content
            return search

        paths: dict[str, Callable[[str], Awaitable[Any]]] = {
            "direct": lambda q: direct.retrieve(q, top_k=top_k), "mcp in-process": tool(inproc),
            "mcp stdio": tool(over_stdio), "mcp http": tool(over_http)}
        for round_ in range(rounds + 1):
            for name, fn in paths.items():
                spent = await timed(fn, QUERIES)
                times[name if round_ else "direct, cold" if name == "direct" else "warm-up"].extend(spent)
    del times["warm-up"]
    return times


async def agent_calls(url: str) -> list[tuple[Call, bool, str]]:
    """Each scripted call, whether it went as it should, and what came back."""
    out = []
    async with http_client(url, "reader") as reader, http_client(url, "writer") as writer:
        for call in AGENT_CALLS:
            what, key, tool, arguments, should_succeed, must_say = call
            result = await (reader if key == "reader" else writer).call_tool(tool, arguments)
            text = json.dumps(result.structured_content) if result.structured_content else result.content[0].text
            ok = (not result.is_error) == should_succeed and must_say in text
            out.append((call, ok, text))
    return out


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6, help="counted rounds over the 20 queries (after 1 warm-up)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--no-geri", action="store_true", help="skip Geri (and the ask call)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        freki, engine, geri, backend = start_services(Path(tmp) / "freki", not args.no_geri)
        odin = OdinSettings(freki_target=freki.address, geri_target=geri.address if geri else "127.0.0.1:1",
                            tenant_id=TENANT)
        odin_args = ["-m", "odin_client.cli", "mcp", "--freki", odin.freki_target, "--geri", odin.geri_target,
                     "--tenant", TENANT]
        port = 18000 + os.getpid() % 1000
        proc = start_http(odin_args, Path(tmp) / "mcp.json", port)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            times = asyncio.run(overhead(odin, odin_args, url, args.rounds, args.top_k))
            calls = asyncio.run(agent_calls(url)) if geri else []
        finally:
            proc.terminate()
            proc.wait()
            freki.stop(1.0)
            engine.close()
            if geri:
                geri.stop(1.0)
                backend.close()
    base = statistics.median(times["direct"])
    print(f"{len(QUERIES)} queries x {args.rounds} rounds, top_k {args.top_k} (ms per call)")
    print(f"{'path':<16}{'p50':>8}{'p95':>8}{'p50 overhead':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<16}{median:8.2f}{p(values, 95):8.2f}{median - base:+14.2f}")
    if calls:
        print(f"\nagent-style calls over HTTP: {sum(ok for _, ok, _ in calls)} of {len(calls)} as expected")
        for (what, key, tool, _, should, _), ok, text in calls:
            print(f"  {'ok ' if ok else 'BAD'} {what:<22} {key:<7} {tool:<16} "
                  f"{'success' if should else 'error'}: {' '.join(text.split())[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
