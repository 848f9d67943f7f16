"""Search modes, fusion, thresholds, query variants, MMR and re-ranking through Freki's gRPC API.

A real in-process server on port 0 per configuration, with the real MiniLM model and Qdrant engine
(embedded edge engine, and qdrant-client's local mode for the remote-store code path).
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

DOCS = {
    # Look-alike codes: the embedding sees "ERR-7781" / "E44xx" and prefers the wrong passage.
    "pump-7781b": "Fault ERR-7781-B: the coolant pump stopped because its inlet filter is clogged. "
                  "Clean the filter and restart the unit.",
    "pump-7781ac": "Faults ERR-7781-A and ERR-7781-C: the coolant pump controller lost power. Reset the breaker.",
    "pump-codes": "Error reference ERR-7781: list of coolant pump error codes and what they mean.",
    "sensor-codes": "Error codes such as E4471 and E4418 indicate sensor calibration faults.",
    "valve-e4417": "If the display shows E4417, the water inlet valve is blocked; clean the mesh screen.",
    "car-battery": "The car would not start on cold mornings because the battery had lost its charge overnight.",
    "oven": "Turn the oven dial to 200 degrees and leave the tray outside the freezer until it thaws.",
    "freezer": "A freezer set below minus eighteen degrees keeps food safe for months; turn it over to defrost.",
    # Lexical look-alikes of the paraphrase query: they share its words, not its meaning.
    "van": "The delivery vehicle parked outside the warehouse while workers turn pallets over for inspection.",
    "page": "Turn the page over to read the notes printed outside the margin.",
    "bananas": "Bananas are rich in potassium and make a convenient snack between meals.",
    "python": "Python lists are dynamic arrays; appending an element takes amortised constant time.",
    "rome": "The Roman Empire built roads across Europe that were used for centuries.",
    "dup-1": "Solar panels convert sunlight into electricity using photovoltaic cells made of silicon.",
    "dup-2": "Solar panels convert sunlight into electricity using photovoltaic cells made from silicon.",
    "wind": "Wind turbines generate renewable electricity from moving air instead of sunlight.",
}
# Dense ranks the look-alike "E4471 / E4418" passage first (cosine 0.47 vs 0.41).
CODE_QUERIES = {"E4417": "valve-e4417"}
CODE_QUERY = "E4417"
PARAPHRASE_QUERY = "why does my vehicle fail to crank in icy winter weather"  # no word of "car-battery"


def start(tmp: Path, embedder, **retrieval: object):  # type: ignore[no-untyped-def]
    store: dict[str, object] = {"backend": "remote", "url": ":memory:"} if retrieval.pop("remote", False) else {}
    settings = FrekiSettings(host="127.0.0.1", port=0, data_dir=tmp, shutdown_grace_s=1.0,
                             retrieval=retrieval, store=store)  # type: ignore[arg-type]
    handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
    channel = grpc.insecure_channel(handle.address)
    stub = freki_pb2_grpc.FrekiServiceStub(channel)
    for doc_id, text in DOCS.items():
        stub.IndexDocument(freki_pb2.IndexDocumentRequest(request_id=str(uuid.uuid4()), document_id=doc_id,
                                                          content=text, content_type="text"), timeout=120)
    return handle, engine, channel, stub


@pytest.fixture(scope="module", params=["edge-convex", "edge-rrf", "remote-convex", "remote-rrf"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder
           ) -> Iterator[tuple[str, freki_pb2_grpc.FrekiServiceStub]]:  # type: ignore[no-untyped-def]
    backend, fusion = request.param.split("-")
    handle, engine, channel, stub = start(tmp_path_factory.mktemp(request.param), embedder,
                                          fusion=fusion, remote=backend == "remote", default_mode="hybrid")
    try:
        yield fusion, stub
    finally:
        channel.close()
        handle.stop(1.0)
        engine.close()


def ask(stub: freki_pb2_grpc.FrekiServiceStub, prompt: str, mode: int = common_pb2.SEARCH_MODE_UNSPECIFIED,
        top_k: int = 5, **options: object) -> list[common_pb2.RetrievedDocument]:
    response = stub.RetrieveContext(common_pb2.WolfRequest(
        request_id=str(uuid.uuid4()), model_type=common_pb2.RAG, prompt=prompt,
        retrieval=common_pb2.RetrievalOptions(top_k=top_k, mode=mode, **options)), timeout=60)
    return list(response.rag_context.documents)


def ids(docs: list[common_pb2.RetrievedDocument]) -> list[str]:
    return [d.document_id for d in docs]


def test_hybrid_finds_an_exact_error_code_that_dense_alone_misses(server) -> None:  # type: ignore[no-untyped-def]
    _, stub = server
    for query, target in CODE_QUERIES.items():
        assert ids(ask(stub, query, common_pb2.SEARCH_MODE_DENSE))[0] != target  # look-alike codes win
        assert ids(ask(stub, query, common_pb2.SEARCH_MODE_SPARSE))[0] == target
        assert ids(ask(stub, query, common_pb2.SEARCH_MODE_HYBRID))[0] == target
        assert ids(ask(stub, query))[0] == target  # unspecified = the configured default (hybrid)


def test_paraphrase_that_lexical_search_misses_is_found_by_hybrid(server) -> None:  # type: ignore[no-untyped-def]
    fusion, stub = server
    sparse = ids(ask(stub, PARAPHRASE_QUERY, common_pb2.SEARCH_MODE_SPARSE, top_k=10))
    assert "car-battery" not in sparse and sparse  # BM25 matches only the distractors' shared words
    assert ids(ask(stub, PARAPHRASE_QUERY, common_pb2.SEARCH_MODE_DENSE))[0] == "car-battery"
    hybrid = ids(ask(stub, PARAPHRASE_QUERY, common_pb2.SEARCH_MODE_HYBRID))
    if fusion == "convex":
        assert hybrid[0] == "car-battery"
    else:
        # Rank fusion keeps it among the results but lets lexical noise compete for the top: the
        # reason convex fusion is the default.
        assert "car-battery" in hybrid[:3]


def test_scores_are_in_unit_interval_sorted_and_respect_the_threshold(server) -> None:  # type: ignore[no-untyped-def]
    _, stub = server
    for mode in (common_pb2.SEARCH_MODE_DENSE, common_pb2.SEARCH_MODE_SPARSE, common_pb2.SEARCH_MODE_HYBRID):
        docs = ask(stub, "coolant pump fault codes", mode, top_k=10)
        scores = [d.relevance_score for d in docs]
        assert docs and all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
        cut = scores[len(scores) // 2]
        kept = ask(stub, "coolant pump fault codes", mode, top_k=10, score_threshold=cut)
        assert kept and all(d.relevance_score >= cut - 1e-6 for d in kept) and len(kept) <= len(docs)
        if scores[0] < 1.0:  # nothing passes a threshold above the best score
            assert ask(stub, "coolant pump fault codes", mode, top_k=10, score_threshold=scores[0] + 1e-3) == []


# Convex fusion only: with ~20 passages every variant's list holds every passage, so RRF favours
# passages both variants rank middling over either variant's best; fusion.rrf's unit tests cover
# RRF merging of variants.
@pytest.mark.parametrize("server", ["edge-convex", "remote-convex"], indirect=True)
def test_query_variants_are_merged(server) -> None:  # type: ignore[no-untyped-def]
    _, stub = server
    alone = ids(ask(stub, CODE_QUERY, common_pb2.SEARCH_MODE_HYBRID, top_k=2))
    assert "car-battery" not in alone
    merged = ids(ask(stub, CODE_QUERY, common_pb2.SEARCH_MODE_HYBRID, top_k=4,
                     query_variants=[PARAPHRASE_QUERY], score_threshold=0.0))  # merging is tested, not relevance
    assert "valve-e4417" in merged and "car-battery" in merged


def test_mmr_spreads_near_duplicates_apart(server) -> None:  # type: ignore[no-untyped-def]
    _, stub = server
    query = "how do solar panels turn sunlight into electricity"
    plain = ids(ask(stub, query, common_pb2.SEARCH_MODE_DENSE, top_k=2))
    assert sorted(plain) == ["dup-1", "dup-2"]
    diverse = ids(ask(stub, query, common_pb2.SEARCH_MODE_DENSE, top_k=2, mmr_diversity=0.7))
    assert diverse[0] in ("dup-1", "dup-2") and diverse[1] not in ("dup-1", "dup-2")


def test_rerank_uses_the_configured_cross_encoder(tmp_path: Path, embedder, minilm_cross_encoder: Path) -> None:  # type: ignore[no-untyped-def]
    from freki.search.rerank import CrossEncoderReranker

    handle, engine, channel, stub = start(tmp_path, embedder, reranker_model=str(minilm_cross_encoder))
    try:
        docs = ask(stub, "coolant pump fault", common_pb2.SEARCH_MODE_HYBRID, top_k=4, rerank=True)
        expected = CrossEncoderReranker(minilm_cross_encoder).score("coolant pump fault", [d.content for d in docs])
        assert [d.relevance_score for d in docs] == pytest.approx(expected, abs=1e-5)
        assert [d.relevance_score for d in docs] == sorted((d.relevance_score for d in docs), reverse=True)
        # Without rerank=True the same server returns fusion scores, not the cross-encoder's.
        plain = ask(stub, "coolant pump fault", common_pb2.SEARCH_MODE_HYBRID, top_k=4)
        assert [d.relevance_score for d in plain] != pytest.approx([d.relevance_score for d in docs], abs=1e-5)
    finally:
        channel.close()
        handle.stop(1.0)
        engine.close()
