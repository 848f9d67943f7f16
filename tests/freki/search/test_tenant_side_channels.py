"""Tenant A cannot observe tenant B through shared machinery: the query-embedding cache or BM25 statistics.

A real Freki (gRPC server on port 0, the real MiniLM model, the embedded Qdrant engine) serves two
tenants; A looks for any trace of what B asked or indexed. The result cache is off so that every query
reaches the store and the embedder.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings

pytestmark = pytest.mark.integration

RARE = "zorblaxite"  # a word only the two tenants' test documents contain
A_TEXT = f"The {RARE} sample in the agency archive was catalogued by the curator in spring."
FILLER = ["The tenant signed the lease for the flat on the third floor near the park.",
          "Heating costs are shared between the flats according to their floor area.",
          "The caretaker checks the boiler every autumn before the heating season starts."]


class Freki:
    """A running Freki on ``data_dir`` and a stub to it; ``restart`` reopens the same data."""

    def __init__(self, data_dir: Path, embedder) -> None:  # type: ignore[no-untyped-def]
        self._settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=data_dir, shutdown_grace_s=1.0,
                                       retrieval={"result_cache_bytes": 0})  # type: ignore[arg-type]
        self._embedder = embedder
        self._start()

    def _start(self) -> None:
        self.handle, self.engine = build_server(self._settings,
                                                engine=FrekiEngine(self._settings, embedder=self._embedder))
        self._channel = grpc.insecure_channel(self.handle.address)
        self.stub = freki_pb2_grpc.FrekiServiceStub(self._channel)

    def stop(self) -> None:
        self._channel.close()
        self.handle.stop(1.0)
        self.engine.close()

    def restart(self) -> None:
        self.stop()
        self._start()

    def index(self, tenant: str, document_id: str, text: str) -> None:
        self.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=str(uuid.uuid4()), tenant_id=tenant, document_id=document_id, content=text,
            content_type="text"), timeout=120)

    def ask(self, tenant: str, prompt: str, mode: int = common_pb2.SEARCH_MODE_SPARSE
            ) -> list[common_pb2.RetrievedDocument]:
        response = self.stub.RetrieveContext(common_pb2.WolfRequest(
            request_id=str(uuid.uuid4()), model_type=common_pb2.RAG, prompt=prompt, tenant_id=tenant,
            retrieval=common_pb2.RetrievalOptions(top_k=5, mode=mode, score_threshold=0.0)), timeout=60)
        return list(response.rag_context.documents)


@pytest.fixture
def freki(tmp_path: Path, embedder) -> Iterator[Freki]:  # type: ignore[no-untyped-def]
    server = Freki(tmp_path, embedder)
    try:
        yield server
    finally:
        server.stop()


def test_a_cannot_tell_whether_b_asked_a_question(freki: Freki, embedder) -> None:  # type: ignore[no-untyped-def]
    freki.index("agency-a", "a-doc", A_TEXT)
    question = f"who catalogued the sample in spring {uuid.uuid4().hex[:8]}?"  # never asked before

    freki.ask("agency-b", question, common_pb2.SEARCH_MODE_DENSE)  # B asks first
    hits, misses = embedder.cache_hits, embedder.cache_misses
    freki.ask("agency-a", question, common_pb2.SEARCH_MODE_DENSE)
    # A's question is computed afresh, as if B had never asked: no faster answer, no hit counted.
    assert (embedder.cache_hits, embedder.cache_misses) == (hits, misses + 1)

    freki.ask("agency-a", question, common_pb2.SEARCH_MODE_DENSE)  # A's own repeat is still cached
    assert (embedder.cache_hits, embedder.cache_misses) == (hits + 1, misses + 1)


def a_scores(data_dir: Path, embedder, a: str, b: str, b_word: str) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """A's relevance for its own document on a query for ``RARE`` after B indexed documents containing
    ``b_word``: right after B's writes and after a restart."""
    freki = Freki(data_dir, embedder)
    try:
        freki.index(a, "a-doc", A_TEXT)
        for i, text in enumerate(FILLER):
            freki.index(a, f"a-filler-{i}", text)
        for i in range(6):
            freki.index(b, f"b-{i}", f"Note {i}: the {b_word} delivery reached the depot on Monday and was signed for.")
        assert len(freki.ask(b, b_word)) == 5  # B's documents are indexed and found by B
        [now] = [d.relevance_score for d in freki.ask(a, RARE) if d.document_id == "a-doc"]
        freki.restart()
        hits = freki.ask(a, RARE)
        assert [d.document_id for d in hits] == ["a-doc"]  # tenant filter, as ever
        return now, hits[0].relevance_score
    finally:
        freki.stop()


# The two runs make the same calls in the same order, so the collection holds as many chunks in both
# (BM25's N is the collection's; docs/decisions/0211-tenant-side-channels.md); they differ only in B's word.
@pytest.mark.parametrize(("a", "b"), [("", "agency-b"), ("agency-a", "")], ids=["a-default", "b-default"])
def test_a_cannot_tell_whether_b_indexed_a_word(tmp_path: Path, embedder, a: str, b: str) -> None:  # type: ignore[no-untyped-def]
    without_word = a_scores(tmp_path / "without", embedder, a, b, "granite")
    with_word = a_scores(tmp_path / "with", embedder, a, b, RARE)
    assert with_word == pytest.approx(without_word, rel=1e-6)
    assert without_word[1] == pytest.approx(without_word[0], rel=1e-6)  # and a restart changes nothing
