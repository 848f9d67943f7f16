"""Language-aware lexical search through the real engine (real embedding model, real Qdrant engine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.search.retrieval import Query
from freki.settings import FrekiSettings

pytestmark = pytest.mark.integration
T = "tenant-lang"
EXPOSE = ("# Exposé\n\nDie helle Wohnung liegt im dritten Stock eines sanierten Altbaus. Die Kaltmiete beträgt "
          "950 Euro im Monat, die Nebenkosten werden jährlich abgerechnet. Haustiere sind nach Absprache erlaubt.\n\n"
          "## Summary\n\nA bright flat on the third floor of a renovated old building, rent 950 euros a month, "
          "pets allowed by arrangement.\n")
OTHER = "# Notes\n\nThe caretaker collects the keys on Mondays and checks the heating in every flat.\n"


def doc(document_id: str, body: str, **metadata: str) -> IndexInput:
    return IndexInput(tenant_id=T, document_id=document_id, data=body, source=f"{document_id}.md",
                      metadata=dict(metadata))


def sparse(engine: FrekiEngine, text: str, language: str = "") -> list[str]:
    hits = engine.retrieve(Query(tenant_id=T, text=text, top_k=5, score_threshold=0.0, mode="sparse",
                                 language=language))
    return [h.document_id for h in hits]


def test_german_document_is_analyzed_in_german_per_section(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(FrekiSettings(data_dir=tmp_path, embedding_backend="torch"), embedder=embedder)
    try:
        engine.index(doc("expose", EXPOSE))
        engine.index(doc("notes", OTHER))
        chunks = engine.chunks_of(T, "expose")
        assert {(c.payload["language"], c.payload["analyzer"]) for c in chunks} == {
            ("de", "snowball-german-fold-v1"), ("en", "porter-crc32-v1")}
        assert engine.get_document(T, "expose").languages[0] in ("de", "en")
        assert set(engine.get_document(T, "expose").languages) == {"de", "en"}
        # Inflected German forms ("Wohnungen", "Haustieren") share the passage's German stems; under English
        # analysis they shared none.
        assert sparse(engine, "Wohnungen mit Haustieren") == ["expose"]
        assert sparse(engine, "Wohnungen mit Haustieren", language="de-DE") == ["expose"]
        assert sparse(engine, "heating keys")[0] == "notes"
        # One word is too short to tell its language: analyzed in English and in the detector's guess, German.
        assert sparse(engine, "Haustieren") == ["expose"]
        assert sparse(engine, "Nebenkosten") == ["expose"]
    finally:
        engine.close()


def test_declared_language_wins(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(FrekiSettings(data_dir=tmp_path, embedding_backend="torch"), embedder=embedder)
    try:
        engine.index(doc("expose", EXPOSE, language="en"))
        assert {c.payload["language"] for c in engine.chunks_of(T, "expose")} == {"en"}
        assert engine.get_document(T, "expose").languages == ["en"]
    finally:
        engine.close()


def test_scripts_without_spaces_or_stemmer_and_emoji_index_and_match(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    engine = FrekiEngine(FrekiSettings(data_dir=tmp_path, embedding_backend="torch"), embedder=embedder)
    try:
        engine.index(doc("zh", "这套公寓的租金是每月九百五十欧元，包括暖气费用。"))
        engine.index(doc("ar", "إيجار الشقة تسعمائة وخمسون يورو في الشهر"))
        engine.index(doc("emoji", "🏠🔑🎉 👍👍"))
        assert {c.payload["language"] for c in engine.chunks_of(T, "zh")} == {"zh"}
        assert {c.payload["analyzer"] for c in engine.chunks_of(T, "ar")} == {"snowball-arabic-v1"}
        assert sparse(engine, "租金是多少") == ["zh"]  # bigrams: no spaces to split on
        assert sparse(engine, "إيجار الشقة") == ["ar"]
        assert sparse(engine, "🏠🔑") == []  # no terms: nothing, not everything
    finally:
        engine.close()
