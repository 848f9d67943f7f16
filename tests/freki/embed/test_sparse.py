"""Unit tests of the BM25 sparse encoder and the Porter stemmer."""

from __future__ import annotations

import zlib

import pytest

from freki.embed.sparse import Bm25Params, SparseEncoder, term_index, tokenize
from freki.embed.stemming import stem


def weights(vector) -> dict[int, float]:  # type: ignore[no-untyped-def]
    return dict(zip(vector.indices, vector.values, strict=True))


def test_tokenize_lowercases_drops_stop_words_and_stems() -> None:
    assert tokenize("What are the Indexing rules?") == ["index", "rule"]


def test_inflections_share_a_term() -> None:
    assert tokenize("indexed")[0] == tokenize("indexes")[0] == tokenize("indexing")[0]


def test_identifiers_are_kept_whole_and_as_parts() -> None:
    terms = tokenize("Pump fault ERR-7781-B, see os.path.join")
    assert "err-7781-b" in terms and "7781" in terms and "err" in terms
    assert "os.path.join" in terms and "join" in terms


def test_numbers_and_codes_are_not_stemmed() -> None:
    assert tokenize("x86 e1234 2024") == ["x86", "e1234", "2024"]


@pytest.mark.parametrize(("word", "expected"), [
    ("caresses", "caress"), ("ponies", "poni"), ("agreed", "agre"), ("hopping", "hop"), ("filing", "file"),
    ("relational", "relat"), ("generalizations", "gener"), ("adjustment", "adjust"), ("electrical", "electr"),
    ("happy", "happi"), ("controll", "control"),
])
def test_porter_reference_stems(word: str, expected: str) -> None:
    # Pairs from Porter's published test vocabulary (tartarus.org/martin/PorterStemmer/voc.txt / output.txt).
    assert stem(word) == expected


def test_term_index_is_crc32_so_it_is_stable_across_processes() -> None:
    assert term_index("pump") == zlib.crc32(b"pump")


def test_passage_weights_saturate_with_term_frequency() -> None:
    enc = SparseEncoder(Bm25Params(k1=1.2, b=0.0))
    once, many = weights(enc.encode_passage("pump")), weights(enc.encode_passage("pump " * 50))
    idx = term_index("pump")
    assert many[idx] > once[idx]
    assert many[idx] < 1.2 + 1.0  # BM25 term weight never exceeds k1 + 1
    assert once[idx] == pytest.approx(1.0)  # tf=1, no length normalisation: (k1+1)/(1+k1)


def test_longer_passages_weigh_each_term_less() -> None:
    enc = SparseEncoder(Bm25Params(avgdl=10))
    short = weights(enc.encode_passage("pump failure"))
    long = weights(enc.encode_passage("pump failure " + " ".join(f"word{i}" for i in range(40))))
    assert long[term_index("pump")] < short[term_index("pump")]


def test_query_has_weight_one_per_distinct_term() -> None:
    vector = SparseEncoder().encode_query("pump pump failure")
    assert sorted(vector.values) == [1.0, 1.0]
    assert vector.indices == sorted(vector.indices)


def test_stop_word_only_query_is_empty() -> None:
    vector = SparseEncoder().encode_query("what is the")
    assert vector.indices == [] and vector.values == []


def test_fingerprint_changes_with_parameters() -> None:
    assert SparseEncoder(Bm25Params(k1=1.2)).fingerprint != SparseEncoder(Bm25Params(k1=0.9)).fingerprint


def test_invalid_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="b in"):
        SparseEncoder(Bm25Params(b=1.5))


def test_each_non_default_tenant_has_its_own_term_space() -> None:
    enc = SparseEncoder()
    text = "pump failure ERR-7781"
    plain = enc.encode_query(text)
    assert enc.encode_query(text, "", "default") == plain  # the default tenant keeps the plain hashes
    a, b = enc.encode_query(text, "", "agency-a"), enc.encode_query(text, "", "agency-b")
    assert len({tuple(plain.indices), tuple(a.indices), tuple(b.indices)}) == 3
    assert a.values == plain.values
    assert enc.encode_passage(text, "en", "agency-a").indices == a.indices  # passages and queries agree
