"""The knowledge graph over documents of two embedding models (real models and engine): a linked document in
a type-specific model's collection joins through expansion, and explanations score each hit in its own
model's collection."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from freki.engine import FrekiEngine
from freki.search.retrieval import Query
from tests.freki.engine.small_model import build_small_model
from tests.freki.engine.test_embedding_models import add, settings_for

pytestmark = pytest.mark.integration

SEED = "# Zorblat Reactor\n\nThe zorblat reactor in hall seven needs its coolant, see [[Coolant Spec]]."
COOLANT = "# Coolant Spec\n\nLiquid helium cooled to four kelvin, delivered in blue dewars every Monday."


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[tuple[FrekiEngine, str]]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("graph-models")
    small = str(build_small_model(root / "mini-128"))
    engine = FrekiEngine(settings_for(root / "data", {"spec": small}), embedder=embedder)
    add(engine, "seed.md", SEED, "seed.md")  # standard model
    add(engine, "coolant.md", COOLANT, "coolant.md", metadata={"document_type": "spec"})  # the small model
    try:
        yield engine, small
    finally:
        engine.close()


def test_a_neighbour_in_another_models_collection_joins_and_is_explained(engine: tuple[FrekiEngine, str]) -> None:
    eng, small = engine
    assert eng.get_document("t1", "coolant.md").embedding_model == small
    # Sparse retrieval finds only the seed ("zorblat"); its link brings the coolant spec in.
    hits = eng.retrieve(Query(tenant_id="t1", text="zorblat reactor", top_k=5, score_threshold=0.0, mode="sparse",
                              graph_expand=True, explain=True))
    assert {h.document_id for h in hits} == {"seed.md", "coolant.md"}
    neighbour = next(h for h in hits if h.document_id == "coolant.md")
    assert neighbour.model == small and neighbour.explanation.neighbour
    assert neighbour.explanation.dense_score != 0 and neighbour.explanation.edge_bonus > 0


def test_a_hit_of_a_type_specific_model_is_explained_in_its_collection(engine: tuple[FrekiEngine, str]) -> None:
    eng, small = engine
    hits = eng.retrieve(Query(tenant_id="t1", text="blue dewars of liquid helium", top_k=2, score_threshold=0.0,
                              explain=True))
    top = hits[0]
    assert (top.document_id, top.model) == ("coolant.md", small)
    assert top.explanation.dense_score > 0.3 and top.explanation.sparse_score > 0
    assert "helium" in top.explanation.matched_terms
