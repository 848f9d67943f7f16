"""A renamed document keeps its knowledge-graph links through the move itself (real engine and model),
before the index call that follows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.watch.moves import move_document
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration


def test_a_move_carries_the_documents_links_and_its_backlinks(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(freki_settings(tmp_path), embedder=embedder)
    try:
        def add(doc_id: str, text: str) -> None:
            engine.index(IndexInput(tenant_id="t", document_id=doc_id, data=text, source=doc_id))

        add("notes/a.md", "# Alpha\n\nAlpha relies on [[Beta]] and on [the spec](spec.md).")
        add("notes/b.md", "# Beta\n\nBeta is what alpha relies on.")
        add("other/spec.md", "# Spec\n\nThe spec (in another folder).")
        add("notes/spec.md", "# Spec\n\nThe spec next to alpha.")
        assert move_document(engine, "t", "notes/a.md", "other/a.md", source="other/a.md") > 0
        out = {(x.target, x.target_document_id) for x in engine.graph.document_links("t", "other/a.md", 10)[0]}
        assert out == {("Beta", "notes/b.md"), ("spec.md", "other/spec.md")}  # the relative link: from other/
        assert [x.source_document_id for x in engine.graph.document_links("t", "notes/b.md", 10)[1]] == [
            "other/a.md"]
    finally:
        engine.close()
