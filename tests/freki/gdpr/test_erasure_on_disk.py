"""Erasure holds on disk: after DeleteOwnerData / DeleteDocument return, no byte of the erased text is left
anywhere under the data dir — not in the engine's segments, not in its write-ahead log, not in the key store."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration


def on_disk(data_dir: Path, needle: str) -> list[str]:
    """Files under ``data_dir`` whose bytes contain ``needle`` (as UTF-8)."""
    raw = needle.encode()
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*") if p.is_file() and raw in p.read_bytes())


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "purge-only"])
def test_erased_text_is_gone_from_every_file(tmp_path: Path, embedder, sealed: bool) -> None:  # type: ignore[no-untyped-def]
    settings = freki_settings(tmp_path, gdpr={"encrypt_payloads": sealed})
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)
            def body(canary: str) -> str:
                return f"Zephyrine Quodlibet keeps her {canary} in the blue ledger. " * 30

            def index(doc: str, owner: str, text: str, **kw: object) -> None:
                stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                    request_id=doc, document_id=doc, owner_id=owner, content=text, **kw), timeout=60)

            index("alice-1", "alice", "---\nnickname: CANARYFRONTMATTER\n---\n# Diary\n\n" + body("CANARYOLD"))
            index("alice-1", "alice", "---\nnickname: CANARYFRONTMATTER\n---\n# Diary\n\n" + body("CANARYNEW"),
                  metadata={"city": "CANARYMETADATA"}, source="/home/CANARYSOURCE/diary.md")
            index("bob-1", "bob", "Bob's gardening notes: tomatoes need CANARYBOB support in July.")
            index("bob-2", "bob", "Bob's second note.", metadata={"tag": "CANARYDOC"})
            data = Path(settings.data_dir)
            assert on_disk(data, "CANARYMETADATA"), "plain filter fields are on disk before erasure"
            if sealed:
                assert not on_disk(data, "CANARYNEW"), "sealed text is never on disk in the clear"

            stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id="e", owner_id="alice"), timeout=120)
            for canary in ("CANARYOLD", "CANARYNEW", "CANARYFRONTMATTER", "CANARYMETADATA", "CANARYSOURCE"):
                assert on_disk(data, canary) == [], f"{canary} still on disk after DeleteOwnerData"
            stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="d", document_id="bob-2"), timeout=120)
            assert on_disk(data, "CANARYDOC") == [], "still on disk after DeleteDocument"

            hits = stub.RetrieveContext(common_pb2.WolfRequest(
                request_id="q", model_type=common_pb2.RAG, prompt="tomatoes support July"), timeout=30)
            assert hits.rag_context.documents[0].document_id == "bob-1", "the rest of the tenant is untouched"
            assert "CANARYBOB" in hits.rag_context.documents[0].content
            index("alice-2", "alice", "A new note after the erasure: CANARYAFTER.")  # writes work after a purge
            assert [d.document_id for d in stub.ListDocuments(freki_pb2.ListDocumentsRequest(), timeout=30).documents
                    if d.owner_id == "alice"] == ["alice-2"]
    finally:
        handle.stop(1.0)
        engine.close()
