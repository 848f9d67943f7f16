"""What each chunk records of its lexical analysis, and re-encoding stored chunks as they were analyzed."""

from __future__ import annotations

from freki.embed.analyzers import analyzer_for
from freki.embed.sparse import SparseEncoder
from freki.ingest.lexical import chunk_fields, document_languages, lexical_passages, vectors_of_points

GERMAN = "Die Kaltmiete der Wohnungen beträgt 950 Euro im Monat, Haustiere sind nach Absprache erlaubt."


def test_stored_chunks_are_re_encoded_in_their_recorded_language() -> None:
    enc = SparseEncoder()
    german, legacy = vectors_of_points(enc, [GERMAN, GERMAN], [{"language": "de"}, {}])
    assert german == enc._weights(analyzer_for("de").terms(GERMAN))
    assert legacy == enc._weights(analyzer_for("en").terms(GERMAN))  # no field: indexed as English


def test_chunks_record_language_and_analyzer_and_the_document_its_languages() -> None:
    passages = lexical_passages(SparseEncoder(), [GERMAN, "The rent is 950 euros a month, pets are allowed."],
                                groups=["Miete", "Summary"])
    assert [chunk_fields(p) for p in passages] == [
        {"language": "de", "analyzer": "snowball-german-fold-v1"}, {"language": "en", "analyzer": "porter-crc32-v1"}]
    assert sorted(document_languages(passages)) == ["de", "en"]


def test_a_plain_callable_encoder_records_nothing() -> None:
    [passage] = lexical_passages(SparseEncoder().encode_passages, [GERMAN])
    assert passage is not None and chunk_fields(passage) == {}
    assert lexical_passages(None, [GERMAN]) == [None]
