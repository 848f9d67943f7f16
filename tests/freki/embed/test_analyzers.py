"""Per-language lexical analyzers, language detection and the encoder that chooses between them."""

from __future__ import annotations

import pytest

from freki.embed.analyzers import ENGLISH, analyzer_for
from freki.embed.language import LanguageConfig, LanguageDetector, normalize_language
from freki.embed.sparse import Bm25Params, LexicalConfig, SparseEncoder, tokenize

GERMAN = ("Die Wohnung liegt im dritten Stock und hat einen Balkon. Die Kaltmiete beträgt 950 Euro im Monat, "
          "die Nebenkosten werden jährlich abgerechnet.")
ENGLISH_TEXT = "The flat is on the third floor and has a balcony. The rent is 950 euros a month."


def test_english_fingerprint_is_the_one_stored_with_existing_documents() -> None:
    # Part of every document's content hash: a change would re-index every English document.
    assert SparseEncoder().fingerprint == "porter-crc32-v1/k1=1.2/b=0.75/avgdl=100"
    assert SparseEncoder(Bm25Params(), LexicalConfig(german_compounds=True)).fingerprint != SparseEncoder().fingerprint


def test_english_text_keeps_its_terms() -> None:
    enc = SparseEncoder()
    [passage] = enc.encode_document([ENGLISH_TEXT])
    assert (passage.language, passage.analyzer) == ("en", "porter-crc32-v1")
    assert passage.vector == enc._weights(tokenize(ENGLISH_TEXT))
    assert enc.query_terms("What are the indexing rules?") == tokenize("What are the indexing rules?")


def test_german_inflections_meet_and_stop_words_go() -> None:
    de = analyzer_for("de")
    assert de.terms("die Mieten") == de.terms("Miete") == ["miet"]
    assert de.terms("Häuser") == de.terms("Haus")
    assert de.terms("Größe") == de.terms("grösse") == ["gross"]  # umlauts and ß folded as Lucene does
    assert ENGLISH.terms("Mieten") != ENGLISH.terms("Miete")  # what English analysis did to German


def test_german_compound_parts_are_indexed_beside_the_word() -> None:
    terms = analyzer_for("de", german_compounds=True).terms("Mietvertrag")
    assert terms[0] == analyzer_for("de").terms("Mietvertrag")[0]
    assert "vertrag" in terms and "miet" in terms


def test_cjk_text_becomes_character_bigrams() -> None:
    assert analyzer_for("zh").terms("租金是多少") == ["租金", "金是", "是多", "多少"]
    assert analyzer_for("ja").terms("家 Miete") == ["家", "miete"]


@pytest.mark.parametrize("text", ["😀🎉👍", "", "   ", "!!! ???", "\x00\x01"])
def test_text_without_words_has_no_terms_and_no_error(text: str) -> None:
    enc = SparseEncoder()
    assert enc.encode_query(text).indices == []
    [passage] = enc.encode_document([text])
    assert passage.vector.indices == []


def test_scripts_without_a_stemmer_are_lower_cased_words() -> None:
    assert analyzer_for("he").terms("שלום עולם") == ["שלום", "עולם"]
    assert analyzer_for("ru").terms("Квартиры квартира") == ["квартир", "квартир"]


def test_declared_language_wins_over_detection() -> None:
    det = LanguageDetector()
    assert det.choose(GERMAN) == "de"
    assert det.choose(GERMAN, declared="en-GB") == "en"
    assert normalize_language("de_AT") == "de" and normalize_language("not a tag") == ""
    assert normalize_language("deu") == "de" and normalize_language(["de"]) == ""


def test_unsure_detection_falls_back() -> None:
    det = LanguageDetector(LanguageConfig(fallback="en"))
    assert det.detect("Miete").language == ""  # too few letters to tell
    assert det.choose("Miete") == "en" and det.choose("Miete", fallback="de") == "de"
    assert det.choose("租金是多少") == "zh"  # the detector is unsure, the script is not


def test_a_failing_detector_is_an_unsure_one(monkeypatch: pytest.MonkeyPatch) -> None:
    det = LanguageDetector()

    class Broken:
        def detect(self, *_: object, **__: object) -> object:
            raise RuntimeError("model file damaged")

    monkeypatch.setattr(det, "_model", lambda: Broken())
    assert det.detect(GERMAN).language == "" and det.choose(GERMAN) == "en"


def test_each_section_gets_its_language_and_short_ones_the_documents() -> None:
    passages = SparseEncoder().encode_document([GERMAN, ENGLISH_TEXT, "Balkon: ja"],
                                               groups=["Lage", "Summary", "Lage2"])
    assert [p.language for p in passages] == ["de", "en", "de"]
    assert passages[0].analyzer == "snowball-german-fold-v1"


def test_german_query_is_analyzed_in_german() -> None:
    assert SparseEncoder().query_terms("Wie hoch ist die Miete der Wohnungen?") == ["hoch", "miet", "wohnung"]
    assert SparseEncoder().query_terms("Mieten", language="de") == ["miet"]
    # Too short to tell: the fallback's terms (English) and the detector's guess's (German), merged.
    assert SparseEncoder().query_terms("Mieten") == ["mieten", "miet"]
    assert SparseEncoder().query_terms("Nebenkosten") == ["nebenkosten", "nebenkost"]
    assert SparseEncoder().query_terms("error HR-4012") == tokenize("error HR-4012")  # no guess worth a look


def test_query_languages_setting_adds_analyzers_without_the_queries_stop_words() -> None:
    enc = SparseEncoder(lexical=LexicalConfig(query_languages=("en",)))
    assert enc.query_terms("Wie hoch ist die Miete der Wohnungen?") == ["hoch", "miet", "wohnung", "wohnungen"]
    assert "miet" in SparseEncoder(lexical=LexicalConfig(query_languages=("de",))).query_terms("monthly Mieten")


def test_compound_splitting_without_its_package_stops_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from pydantic import ValidationError

    from freki.settings import FrekiSettings

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "compound_split" else real(name, *a))
    with pytest.raises(ValidationError, match="compound-split package is not installed"):
        FrekiSettings(retrieval={"lexical": {"german_compounds": True}})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="ISO 639-1"):
        FrekiSettings(retrieval={"lexical": {"query_languages": ["German"]}})  # type: ignore[arg-type]


def test_a_query_is_trusted_at_a_lower_probability_than_a_passage() -> None:
    det = LanguageDetector()  # passages 0.8, queries 0.5
    text = "Terminal-Einstellungen ändern"  # German at p ~ 0.66
    assert 0.5 <= LanguageDetector(LanguageConfig(min_probability=0.0)).detect(text).probability < 0.8
    assert det.choose(text, query=True) == "de" and det.choose(text) == "en"
    assert SparseEncoder().query_terms(text) == analyzer_for("de").terms(text)


def test_every_squad_passage_and_question_keeps_its_english_terms() -> None:
    # Real English text (../shared/eval/squad-answers): detection must not move any of it off the English
    # analyzer, whose terms are stored in every existing index.
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[3].parent / "shared" / "eval" / "squad-answers"
    if not root.is_dir():
        pytest.skip(f"{root} is not on this machine")
    enc = SparseEncoder()
    passages = [json.loads(line)["text"] for line in (root / "corpus.jsonl").read_text().splitlines()]
    questions = [json.loads(line)["question"] for line in (root / "questions.jsonl").read_text().splitlines()]
    for text in passages:
        [passage] = enc.encode_document([text])
        assert passage.language == "en" and passage.vector == enc._weights(tokenize(text)), text[:80]
    for question in questions:
        assert enc.query_terms(question) == list(dict.fromkeys(tokenize(question))), question
