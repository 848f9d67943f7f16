"""The knowledge graph across several embedding models, on the real engine with two real models.

Linked Markdown notes where one note (frontmatter ``document_type: spec``) is embedded by a second model —
a two-layer cut of the packaged MiniLM projected to 128 dimensions (``small_models_support.py``), whose unrelated
texts sit at cosine ~0.63, so a score that skipped the alignment to the standard model's scale shows.
Graph expansion must find the linked note in the second model's collection, and ``explain`` must score it
with that model's query vector.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search import fusion
from freki.search.retrieval import Hit, Query
from freki.settings import FrekiSettings
from tests.freki.engine.small_models_support import build_small_model

pytestmark = pytest.mark.integration

REACTOR = """# Zorblat Reactor

The zorblat reactor in hall seven is started with the red key and runs on a special coolant,
described in [[Coolant Spec]].
"""
COOLANT = """---
title: Coolant Spec
document_type: spec
---
# Coolant Spec

Liquid helium cooled to four kelvin, delivered in blue dewars every Monday morning.
"""
DISTRACTORS = {
    "hall": "# Hall Eight\n\nHall eight stores spare parts for the loading cranes and the forklifts.",
    "bread": "# Bread\n\nSourdough bread needs a starter, flour, water and salt, and a long cold proof.",
    "fridge": "# Fridge\n\nThe office fridge is cleaned every Friday; label your lunch box with your name.",
}
QUESTION = "How is the zorblat reactor in hall seven started?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[FrekiEngine]:  # type: ignore[no-untyped-def]
    cut = str(build_small_model(tmp_path_factory.mktemp("models") / "cut-128", layers=2))
    settings = FrekiSettings(
        host="127.0.0.1", port=0, data_dir=tmp_path_factory.mktemp("graph-models"),
        embedding_models={"spec": cut}, embedding_backend="torch",
    )  # type: ignore[call-arg]
    engine = FrekiEngine(settings, embedder=embedder)
    try:
        for doc_id, text in {"reactor": REACTOR, "coolant": COOLANT, **DISTRACTORS}.items():
            engine.index(IndexInput(tenant_id="t1", document_id=doc_id, data=text, source=f"{doc_id}.md"))
        # the same linked pair in another tenant: never a neighbour of t1's notes
        for doc_id, text in {"reactor": REACTOR, "coolant": COOLANT}.items():
            engine.index(IndexInput(tenant_id="t2", document_id=doc_id, data=text, source=f"{doc_id}.md"))
        yield engine
    finally:
        engine.close()


def ask(engine: FrekiEngine, text: str, **kw: object) -> list[Hit]:
    return list(engine.retrieve(Query(tenant_id="t1", text=text, top_k=2, score_threshold=0.0, **kw)))  # type: ignore[arg-type]


def test_the_linked_note_lives_in_the_second_models_collection(engine: FrekiEngine) -> None:
    standard, cut = engine.active.retriever.lanes
    assert engine.get_document("t1", "coolant").embedding_model == cut.model
    assert engine.get_document("t1", "reactor").embedding_model == standard.model
    assert cut.calibrate.scale > 1.5  # the cut's background (~0.63) is pulled down to MiniLM's (~0.03)


def test_expansion_finds_a_neighbour_embedded_by_another_model(engine: FrekiEngine) -> None:
    plain = ask(engine, QUESTION)
    assert plain[0].document_id == "reactor" and "coolant" not in {h.document_id for h in plain}
    expanded = ask(engine, QUESTION, graph_expand=True, explain=True)
    assert [h.document_id for h in expanded] == ["reactor", "coolant"]
    neighbour = expanded[1]
    _, cut = engine.active.retriever.lanes
    assert neighbour.model == cut.model and neighbour.payload["tenant_id"] == "t1"
    why = neighbour.explanation
    assert why.neighbour and why.model == cut.model and [e.target_document_id for e in why.edges] == ["coolant"]
    # the second model's cosine, aligned: non-zero, far below the raw cosine of the cut, and the score the
    # expansion started from
    raw = float(np.dot(cut.embed_query(QUESTION), next(iter(cut.chunks.retrieve([neighbour.chunk_id],
                                                                                 with_vectors=True))).dense))
    assert raw > 0.4 and why.dense_score != 0.0 and why.dense_score < raw - 0.2
    assert why.dense_score == pytest.approx(cut.calibrate(raw), abs=1e-5)
    assert why.fused_score == pytest.approx(fusion.dense_relevance(why.dense_score), abs=1e-5)
    assert neighbour.score < expanded[0].score  # follows the seed that brought it


def test_explain_scores_a_hit_of_the_second_model_in_its_own_lane(engine: FrekiEngine) -> None:
    hits = ask(engine, "liquid helium coolant in blue dewars", mode="hybrid", explain=True)
    top = hits[0]
    _, cut = engine.active.retriever.lanes
    assert top.document_id == "coolant" and top.model == cut.model
    why = top.explanation
    assert why.model == cut.model and why.dense_score > 0.2  # a related text on MiniLM's scale
    assert why.sparse_score > 0 and {"helium", "coolant"} <= set(why.matched_terms)
    other = hits[1].explanation  # a standard-model hit keeps its plain cosine
    assert other.model == engine.active.retriever.lanes[0].model and other.dense_score != 0.0
