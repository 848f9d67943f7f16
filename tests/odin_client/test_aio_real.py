"""AsyncOdinClient's document, graph and session calls against the real services: Freki with the packaged
embedding model and the embedded Qdrant engine, Geri with its real session store (embedded SmolLM2).
Each result is also compared with the blocking client's for the same call."""

from __future__ import annotations

import asyncio
import logging
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("freki.api.server")
pytest.importorskip("geri.server")

from odin_client import (  # noqa: E402
    AsyncOdinClient,  # noqa: E402
    IndexResult,
    InvalidRequest,
    NotFound,
    OdinClient,
    OdinSettings,
)
from odin_client.protocol.files import DocumentFile  # noqa: E402
from tests.geri.geri_servers_support import embedded_backend, geri_server  # noqa: E402, F401
from wolf_service.serving import ServerHandle  # noqa: E402

pytestmark = pytest.mark.integration

TENANT = "aio"
REACTOR = "---\ntitle: Zorblat Reactor\n---\n# Zorblat Reactor\n\nThe zorblat reactor needs [[Coolant Spec]].\n"
COOLANT = "---\ntitle: Coolant Spec\n---\n# Coolant Spec\n\nThe coolant is liquid helium mixed with argon.\n"
BROKEN = "---\nk: [unclosed\n---\nbody"  # frontmatter Freki refuses


def _kinds(records: list[dict[str, Any]]) -> list[str]:
    return [next(iter(r)) for r in records]


def test_document_and_graph_calls_against_the_real_freki(real_freki: ServerHandle, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="odin")
    files = {"notes/reactor.md": REACTOR, "notes/broken.md": BROKEN, "notes/coolant.md": COOLANT}
    docs = []
    for source, text in list(files.items())[:2]:
        path = tmp_path / Path(source).name
        path.write_text(text, encoding="utf-8")
        docs.append(DocumentFile(path, source, "markdown"))
    docs.append(DocumentFile(Path("coolant.md"), "notes/coolant.md", "markdown", content=COOLANT.encode()))  # in memory
    settings = OdinSettings(freki_target=real_freki.address, index_deadline_s=120)

    async def run(client: AsyncOdinClient) -> dict[str, Any]:
        out: dict[str, Any] = {"indexed": await client.index_documents(docs, tenant_id=TENANT)}
        await client.index_text("Olga's note: the boiler is serviced every May.", source="notes/olga.md",
                                owner_id="olga", tenant_id=TENANT)
        out["page"] = await client.list_documents(page_size=2, tenant_id=TENANT)
        out["all"] = [d async for d in client.iter_documents(page_size=2, tenant_id=TENANT)]
        out["other_tenant"] = await client.list_documents(tenant_id="someone-else")
        out["coolant"] = await client.get_document("notes/coolant.md", tenant_id=TENANT)
        out["links"] = await client.list_links("notes/reactor.md", tenant_id=TENANT)
        found = await client.retrieve("zorblat coolant", top_k=2, score_threshold=0.0, explain=True,
                                      tenant_id=TENANT)
        out["feedback"] = await client.record_feedback(found.context.query_id, 5, document_id="notes/coolant.md",
                                                       tenant_id=TENANT)
        out["embedded"] = await client.embed(["liquid helium", "argon"])
        out["export"] = [r async for r in client.export_owner("olga", tenant_id=TENANT)]
        return out

    async def reindex_and_delete(client: AsyncOdinClient) -> tuple[Any, ...]:
        reindexed = await client.full_reindex(document_id="notes/olga.md", tenant_id=TENANT)
        deleted = await client.delete_document("notes/olga.md", tenant_id=TENANT)
        errors = []
        for call in (client.get_document, client.delete_document):
            try:
                await call("notes/olga.md", tenant_id=TENANT)
            except NotFound as exc:
                errors.append(exc)
        return reindexed, deleted, errors

    got = asyncio.run(_with_client(settings, run))
    assert [type(r) for r in got["indexed"]] == [IndexResult, InvalidRequest, IndexResult]
    assert "stream unusable" not in caplog.text  # all three went over the IndexDocuments stream
    ids = ["notes/coolant.md", "notes/olga.md", "notes/reactor.md"]
    assert sorted(d.document_id for d in got["all"]) == ids  # every page, each document once
    assert got["page"].documents == got["all"][:2] and got["page"].next_page_token
    assert got["other_tenant"].documents == []  # tenants never see each other's documents
    assert got["coolant"].tenant_id == TENANT and got["coolant"].chunk_count >= 1
    assert [(e.target, e.target_document_id) for e in got["links"].outgoing] == [("Coolant Spec", "notes/coolant.md")]
    assert got["feedback"].rating == 5
    vectors = got["embedded"].vectors
    assert got["embedded"].dimension == 384 and len(vectors) == 2
    assert all(math.isclose(math.hypot(*v), 1.0, rel_tol=1e-3) for v in vectors)
    assert _kinds(got["export"]) == ["document", "links", "chunk"]
    assert "boiler is serviced every May" in got["export"][2]["chunk"]["content"]

    with OdinClient(settings) as blocking:  # the blocking client reads the same from the same Freki
        assert blocking.list_documents(page_size=2, tenant_id=TENANT) == got["page"]
        assert list(blocking.iter_documents(page_size=2, tenant_id=TENANT)) == got["all"]
        assert blocking.get_document("notes/coolant.md", tenant_id=TENANT) == got["coolant"]
        assert blocking.list_links("notes/reactor.md", tenant_id=TENANT).outgoing == got["links"].outgoing
        assert list(blocking.export_owner("olga", tenant_id=TENANT)) == got["export"]

    reindexed, deleted, not_found = asyncio.run(_with_client(settings, reindex_and_delete))
    assert reindexed.documents_reindexed == 1 and deleted >= 1
    assert len(not_found) == 2  # GetDocument and DeleteDocument of the deleted document: NotFound


def test_delete_session_against_the_real_geri(geri_server: ServerHandle):  # noqa: F811
    settings = OdinSettings(geri_target=geri_server.address, generate_deadline_s=300)

    async def run(client: AsyncOdinClient) -> tuple[bool, bool, bool, bool]:
        await client.generate("Remember me.", session_id="aio-chat", max_tokens=2)
        stored = await client.get_session("aio-chat") is not None
        first = await client.delete_session("aio-chat")
        gone = await client.get_session("aio-chat") is None
        return stored, first, gone, await client.delete_session("aio-chat")

    assert asyncio.run(_with_client(settings, run)) == (True, True, True, False)


async def _with_client(settings: OdinSettings, work: Any) -> Any:
    async with AsyncOdinClient(settings) as client:
        return await work(client)
